"""What the scripts' checks (cluster_money.py, cluster_tokens.py, faults.py, access_matrix.py)
share: JSON requests to a server, a replica or nginx, and PASS/FAIL lines."""
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


def _parsed(raw):
    """A body as JSON, or as text when it is not JSON (a YAML document, a page)."""
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return raw.decode(errors="replace")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def call(base, method, path, body=None, token=None, key=None, timeout=60, headers=None, follow_redirects=True):
    """(status, parsed JSON body or text, headers); status 0 when the connection failed. `headers`
    are sent as given; without `follow_redirects` a 3xx is the answer."""
    sent = {"Accept": "application/json", **(headers or {})}
    data = json.dumps(body).encode() if body is not None else None
    if data:
        sent["Content-Type"] = "application/json"
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if key:
        sent["Idempotency-Key"] = key
    request = urllib.request.Request(base + path, data=data, method=method, headers=sent)
    opener = urllib.request.build_opener() if follow_redirects else urllib.request.build_opener(_NoRedirects)
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, _parsed(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, _parsed(error.read()), dict(error.headers)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
        return 0, str(error), {}
