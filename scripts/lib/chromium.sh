# Sourced by scripts/test: Debian's Chromium and ChromeDriver for the web
# console's browser tests (converge-cli's tests/cli/console/). Installed
# only when /usr/bin/chromedriver is missing; exports
# CONVERGE_TEST_CHROMEDRIVER and CONVERGE_TEST_CHROMIUM (under CI=true the
# console tests fail without them).
if [ ! -x /usr/bin/chromedriver ] || [ ! -x /usr/bin/chromium ]; then
  echo "== installing chromium and chromium-driver"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    sudo -n apt-get update -qq
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
fi
export CONVERGE_TEST_CHROMEDRIVER=/usr/bin/chromedriver
export CONVERGE_TEST_CHROMIUM=/usr/bin/chromium
