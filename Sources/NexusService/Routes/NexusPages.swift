import Hummingbird
import PurseDatabase
import PurseServer

/// The web checkout and enrolment pages: the same flow as the phone app, with the browser's
/// WebAuthn API (`navigator.credentials.create/get`) against the same endpoints.
enum NexusPages {
    static func mount(on router: Router<PurseRequestContext>) {
        router.get("nexus/checkout") { _, _ in Response.html(page(title: "Buy airtime", body: checkoutBody)) }
        router.get("nexus/enroll") { _, _ in Response.html(page(title: "Enrol a passkey", body: enrolBody)) }
    }

    static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Nexus Data · \(title)</title>
        <style>
        body{font-family:system-ui,sans-serif;max-width:30rem;margin:1.5rem auto;padding:0 1rem;color:#17202a}
        h1{font-size:1.4rem}fieldset{border:1px solid #d5d8dc;border-radius:.5rem;margin:0 0 1rem;padding:.75rem}
        label{display:block;margin:.4rem 0 .2rem;font-size:.9rem}input,select,button{font:inherit;padding:.45rem;width:100%;box-sizing:border-box}
        button{margin-top:.6rem;background:#1e8449;color:#fff;border:0;border-radius:.4rem;cursor:pointer}
        button.secondary{background:#5d6d7e}#status{min-height:1.5rem;font-weight:600}.error{color:#b03a2e}.ok{color:#1e8449}
        </style></head><body>
        <h1>Nexus Data · \(title)</h1>
        <p id="status" role="status"></p>
        <button id="signout" class="secondary" hidden>Sign out</button>
        <fieldset id="signin"><legend>Sign in</legend>
          <label for="email">Email</label><input id="email" type="email" autocomplete="username">
          <label for="password">Password</label><input id="password" type="password" autocomplete="current-password">
          <button id="login">Sign in</button><button id="register" class="secondary">Create account</button>
        </fieldset>
        \(body)
        <script>\(script)</script>
        </body></html>
        """
    }

    static let enrolBody = """
        <fieldset id="enrol"><legend>Passkey</legend>
          <p>Enrol this device's biometric (Face ID, Touch ID, Windows Hello, fingerprint) for purchases.</p>
          <button id="enrolButton">Enrol passkey</button>
          <p id="credentials"></p>
        </fieldset>
        <p><a href="/nexus/checkout">Go to checkout</a></p>
        """

    static let checkoutBody = """
        <fieldset id="wallet"><legend>Wallet</legend>
          <p>Balance: <strong id="balance">–</strong> · Cashback: <span id="cashback">–</span></p>
          <label for="fundAmount">Fund (sandbox)</label><input id="fundAmount" type="number" value="5000" min="1">
          <button id="fund" class="secondary">Add funds</button>
        </fieldset>
        <fieldset id="checkout"><legend>Buy airtime</legend>
          <label for="product">Product</label><select id="product"></select>
          <label for="phone">Recipient phone</label><input id="phone" value="08012345678" inputmode="tel">
          <label for="amount">Amount (₦)</label><input id="amount" type="number" value="500" min="50">
          <button id="buy">Buy with biometrics</button>
          <label for="pin">Or PIN</label><input id="pin" type="password" inputmode="numeric" maxlength="4" autocomplete="off">
          <button id="buyPin" class="secondary">Buy with PIN</button>
          <p id="receipt"></p>
        </fieldset>
        <p><a href="/nexus/enroll">Enrol a passkey</a></p>
        """

    /// Plain JavaScript, no libraries.
    static let script = #"""
        const $ = (id) => document.getElementById(id);
        const b64u = {
          enc: (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g,'-').replace(/\//g,'_').replace(/=+$/,''),
          dec: (s) => Uint8Array.from(atob(s.replace(/-/g,'+').replace(/_/g,'/') + '==='.slice((s.length + 3) % 4)), c => c.charCodeAt(0)),
        };
        const say = (text, ok) => { const s = $('status'); s.textContent = text; s.className = ok ? 'ok' : 'error'; };
        let token = sessionStorage.getItem('nexus.token');
        async function api(method, path, body, headers) {
          const h = Object.assign({'Content-Type': 'application/json'}, headers || {});
          if (token) h['Authorization'] = 'Bearer ' + token;
          const r = await fetch(path, {method, headers: h, body: body === undefined ? undefined : JSON.stringify(body)});
          const text = await r.text();
          let json = {}; try { json = text ? JSON.parse(text) : {}; } catch (e) {}
          if (!r.ok) { const err = new Error(json.message || json.error || ('HTTP ' + r.status)); err.status = r.status; err.body = json; throw err; }
          return json;
        }
        async function signIn(path) {
          try {
            const res = await api('POST', path, {email: $('email').value, password: $('password').value});
            token = res.token; sessionStorage.setItem('nexus.token', token);
            say('Signed in as ' + (res.user.email || res.user.phone), true); await refresh();
          } catch (e) { say(e.message); }
        }
        $('login').onclick = () => signIn('/auth/login');
        $('signout').onclick = () => { token = null; sessionStorage.removeItem('nexus.token'); say('Signed out', true); refresh(); };
        $('register').onclick = () => signIn('/auth/register');
        async function refresh() {
          $('signin').hidden = !!token;
          $('signout').hidden = !token;
          if (!token) return;
          if ($('balance')) {
            const b = await api('GET', '/user/balance');
            $('balance').textContent = '₦' + b.balance; $('cashback').textContent = '₦' + b.cashback;
          }
          if ($('credentials')) {
            const c = await api('GET', '/biometric/credentials');
            $('credentials').textContent = c.credentials.length + ' passkey(s) enrolled';
          }
        }
        if ($('enrolButton')) $('enrolButton').onclick = async () => {
          try {
            const o = await api('POST', '/biometric/register/options');
            const cred = await navigator.credentials.create({publicKey: {
              rp: o.rp, user: {id: b64u.dec(o.user.id), name: o.user.name, displayName: o.user.displayName},
              challenge: b64u.dec(o.challenge), pubKeyCredParams: o.pubKeyCredParams, timeout: o.timeout,
              attestation: o.attestation, authenticatorSelection: o.authenticatorSelection,
              excludeCredentials: o.excludeCredentials.map(c => ({id: b64u.dec(c.id), type: c.type, transports: c.transports})),
            }});
            await api('POST', '/biometric/register/verify', {
              id: cred.id, rawId: b64u.enc(cred.rawId), type: cred.type, name: navigator.platform,
              response: {clientDataJSON: b64u.enc(cred.response.clientDataJSON), attestationObject: b64u.enc(cred.response.attestationObject),
                         transports: cred.response.getTransports ? cred.response.getTransports() : ['internal']},
            });
            say('Passkey enrolled', true); await refresh();
          } catch (e) { say('Enrolment failed: ' + e.message); }
        };
        if ($('fund')) $('fund').onclick = async () => {
          try {
            await api('POST', '/sandbox/nexus/fund', {amount: Number($('fundAmount').value)}, {'Idempotency-Key': crypto.randomUUID()});
            say('Wallet funded', true); await refresh();
          } catch (e) { say(e.message); }
        };
        async function loadProducts() {
          if (!$('product')) return;
          const p = await api('GET', '/products');
          $('product').innerHTML = p.products.map(x => `<option value="${x.code}" data-supplier="${x.supplierSlug}">${x.name}</option>`).join('');
        }
        async function topup(auth) {
          const opt = $('product').selectedOptions[0];
          const res = await api('POST', '/user/topup', Object.assign({
            amount: Number($('amount').value), productCode: opt.value, recipientPhone: $('phone').value,
            supplierSlug: opt.dataset.supplier, useCashback: false}, auth), {'Idempotency-Key': crypto.randomUUID()});
          showTopup(res.data, res.message);
          await refresh();
          if (res.data.status === 'pending') await follow(res.data.transactionId);
        }
        // A top-up is pending until the supplier confirms it; it ends completed or failed (refunded).
        function showTopup(data, message) {
          const shown = {pending: 'Pending: the network has not confirmed delivery yet', completed: 'Delivered', failed: 'Failed, refunded'}[data.status] || data.status;
          $('receipt').textContent = shown + ' · ' + data.transactionId + (data.balance === undefined ? '' : ' · balance ₦' + data.balance);
          $('receipt').dataset.status = data.status;
          say(message, data.status !== 'failed');
        }
        async function follow(id) {
          for (let wait = 1000, i = 0; i < 20; i++, wait = Math.min(wait * 1.5, 15000)) {
            await new Promise(r => setTimeout(r, wait));
            const t = (await api('GET', '/user/transactions/' + encodeURIComponent(id))).data;
            if (t.status === 'completed') { showTopup(t, 'Topup successful'); await refresh(); return; }
            if (t.status === 'failed') { showTopup(t, (t.failureReason || 'Not delivered') + '. ₦' + t.amount + ' is back in your wallet.'); await refresh(); return; }
          }
          say('Still pending: your history will show it once the network confirms.', true);
        }
        if ($('buy')) $('buy').onclick = async () => {
          let step = 'options';
          try {
            const o = await api('GET', '/biometric/auth/options?intent=transaction');
            step = 'biometric';
            const a = await navigator.credentials.get({publicKey: {
              challenge: b64u.dec(o.challenge), rpId: o.rpId, timeout: o.timeout, userVerification: o.userVerification,
              allowCredentials: o.allowCredentials.map(c => ({id: b64u.dec(c.id), type: c.type, transports: c.transports})),
            }});
            step = 'verify';
            const v = await api('POST', '/biometric/auth/verify', {
              id: a.id, rawId: b64u.enc(a.rawId), type: a.type,
              response: {clientDataJSON: b64u.enc(a.response.clientDataJSON), authenticatorData: b64u.enc(a.response.authenticatorData),
                         signature: b64u.enc(a.response.signature), userHandle: a.response.userHandle ? b64u.enc(a.response.userHandle) : undefined},
            });
            step = 'topup';
            await topup({verificationToken: v.verificationToken});
          } catch (e) {
            if (step === 'biometric') say('Biometric failed. Use PIN instead?');
            else if (step === 'verify') say('Verification failed. Try again or use PIN');
            else say(e.message);
          }
        };
        if ($('buyPin')) $('buyPin').onclick = async () => {
          try { await topup({pin: $('pin').value}); } catch (e) { say(e.message); }
        };
        loadProducts().then(refresh).catch(e => say(e.message));
        """#
}
