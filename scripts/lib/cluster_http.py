"""What the cluster checks (scripts/cluster_money.py, scripts/faults.py) share: JSON requests
to a replica or to nginx, and PASS/FAIL lines."""
import json
import sys
import urllib.error
import urllib.request

passed = 0


def check(name, ok, detail=""):
    global passed
    if not ok:
        print(f"FAIL {name} {detail}")
        sys.exit(1)
    passed += 1
    print(f"PASS {name}")


def call(base, method, path, body=None, token=None, key=None, timeout=60):
    """(status, parsed JSON body or text, headers); status 0 when the connection failed."""
    headers = {"Accept": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    if data:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if key:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode(errors="replace")
        return error.code, parsed, dict(error.headers)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
        return 0, str(error), {}
