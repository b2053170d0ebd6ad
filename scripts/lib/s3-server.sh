# Sourced by scripts/test and scripts/bench: starts an S3-compatible server
# (moto, from the venv "$venv") on a free port of 127.0.0.1, creates the
# bucket, exports CONVERGE_TEST_S3_ENDPOINT / _BUCKET and test credentials,
# and stops the server when the calling script exits. The same endpoint
# serves AWS KMS, which the awskms:// secrets tests use. moto runs through
# scripts/lib/moto_server.py, which makes its conditional PUTs atomic as
# S3's are (the stack lease depends on it).
s3_port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/python" "$(dirname "${BASH_SOURCE[0]}")/moto_server.py" -H 127.0.0.1 -p "$s3_port" > "$cache/moto.log" 2>&1 &
s3_pid=$!
on_exit "kill $s3_pid 2>/dev/null || true"
export AWS_ACCESS_KEY_ID=converge-test AWS_SECRET_ACCESS_KEY=converge-test AWS_REGION=us-east-1
export CONVERGE_TEST_S3_ENDPOINT="127.0.0.1:$s3_port" CONVERGE_TEST_S3_BUCKET=converge-test
"$venv/bin/python" - <<PY
import time, boto3
s3 = boto3.client("s3", endpoint_url="http://$CONVERGE_TEST_S3_ENDPOINT", region_name="us-east-1")
for attempt in range(100):
    try:
        s3.create_bucket(Bucket="$CONVERGE_TEST_S3_BUCKET")
        break
    except Exception:
        if attempt == 99:
            raise
        time.sleep(0.2)
PY
echo "== S3 server (moto) on $CONVERGE_TEST_S3_ENDPOINT, bucket $CONVERGE_TEST_S3_BUCKET"
