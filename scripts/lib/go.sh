# Sourced by scripts/test: the Go toolchain and libraries, from Debian's
# packages, that build the Go test Terraform provider
# (crates/converge-testkit/go/gostore: HashiCorp's go-plugin, gRPC,
# protobuf and msgpack) in GOPATH mode, without a module proxy. Installs
# them when missing (golang-goprotobuf-dev conflicts with protoc-gen-go, so
# it is not among them) and exports CONVERGE_TEST_GO, the go binary the
# tests read (under CI=true they fail without it).
go_packages="golang-go golang-github-hashicorp-go-plugin-dev golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc protobuf-compiler golang-github-vmihailenco-msgpack.v5-dev"
go_missing=""
for p in $go_packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || go_missing="$go_missing $p"
done
if [ -n "$go_missing" ]; then
  echo "== installing Go packages:$go_missing"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $go_missing >/dev/null
  else
    sudo -n apt-get update -qq
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $go_missing >/dev/null
  fi
fi
export CONVERGE_TEST_GO="$(command -v go)"
