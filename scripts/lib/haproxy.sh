# Sourced by scripts/test and scripts/load: HAProxy (Debian's package), the
# balancer in front of several `converge serve` replicas in the state
# service's balancer tests and load runs. Installed only when missing;
# exports CONVERGE_TEST_HAPROXY (under CI=true the tests that need it fail
# without it).
if ! command -v haproxy >/dev/null 2>&1; then
  echo "== installing haproxy"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
  else
    sudo -n apt-get update -qq
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
  fi
fi
export CONVERGE_TEST_HAPROXY="$(command -v haproxy)"
