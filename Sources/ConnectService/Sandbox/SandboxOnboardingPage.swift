import Foundation
import PurseFormats
import PurseDatabase
import PurseServer

/// The sandbox's hosted onboarding form, standing in for connect.stripe.com's Express flow.
enum SandboxOnboardingPage {
    /// Fields a complete submission must carry, with Stripe's test values as defaults.
    static let fields: [(name: String, label: String, value: String)] = [
        ("first_name", "First name", "Jenny"),
        ("last_name", "Last name", "Rosen"),
        ("phone", "Phone", "+1 202 555 0143"),
        ("dob", "Date of birth (YYYY-MM-DD)", "1990-01-01"),
        ("address_line1", "Address", "address_full_match"),
        ("city", "City", "San Francisco"),
        ("postal_code", "ZIP", "94103"),
        ("ssn_last_4", "SSN, last 4 digits", "0000"),
        ("routing_number", "Bank routing number", "110000000"),
        ("account_number", "Bank account number", "000123456789"),
    ]

    static func problems(in form: [String: String]) -> [String] {
        var problems: [String] = []
        for field in fields where (form[field.name] ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
            problems.append("\(field.label) is required")
        }
        if let email = form["email"], !email.contains("@") { problems.append("Email is not valid") }
        if let ssn = form["ssn_last_4"], !ssn.isEmpty, !(ssn.count == 4 && ssn.allSatisfy(\.isNumber)) { problems.append("SSN last 4 must be 4 digits") }
        if let routing = form["routing_number"], !routing.isEmpty, !(routing.count == 9 && routing.allSatisfy(\.isNumber)) {
            problems.append("Routing number must be 9 digits")
        }
        if form["tos"] != "accepted" { problems.append("You must accept the Stripe Connected Account Agreement") }
        return problems
    }

    static func render(token: String, email: String, problems: [String] = []) -> String {
        let inputs = fields.map { field in
            """
            <label for="\(field.name)">\(HTML.escape(field.label))</label>
            <input id="\(field.name)" name="\(field.name)" value="\(HTML.escape(field.value))" required>
            """
        }.joined(separator: "\n")
        let errors = problems.isEmpty ? "" : "<ul class=\"errors\">" + problems.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Stripe sandbox · Express onboarding</title>
            <style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:1.5rem auto;padding:0 1rem;color:#1a1f36}
            h1{font-size:1.3rem}.banner{background:#fff4e5;border:1px solid #f5a623;padding:.5rem;border-radius:.4rem;font-size:.85rem}
            label{display:block;margin:.5rem 0 .2rem;font-size:.85rem}input,select{font:inherit;padding:.4rem;width:100%;box-sizing:border-box}
            button{font:inherit;margin-top:.8rem;padding:.55rem;width:100%;border:0;border-radius:.4rem;background:#635bff;color:#fff;cursor:pointer}
            button.secondary{background:#8792a2}.errors{color:#cd3d64}</style></head><body>
            <p class="banner">Purse Stripe sandbox — test mode. No real money or identity checks.</p>
            <h1>Set up payouts for your events</h1>
            \(errors)
            <form method="post" action="/sandbox/stripe/connect/onboarding/\(HTML.escape(token))">
            <label for="business_type">Business type</label>
            <select id="business_type" name="business_type"><option value="individual">Individual</option><option value="company">Company</option></select>
            <label for="business_name">Business name</label><input id="business_name" name="business_name" value="Jenny's Events">
            <label for="business_url">Website</label><input id="business_url" name="business_url" value="https://example.com">
            <label for="email">Email</label><input id="email" name="email" type="email" value="\(HTML.escape(email))">
            \(inputs)
            <label><input type="checkbox" id="tos" name="tos" value="accepted" checked style="width:auto"> I accept the Stripe Connected Account Agreement</label>
            <button id="submit" name="action" value="submit">Agree and submit</button>
            <button id="leave_due" class="secondary" name="action" value="leave_due">Leave requirements due</button>
            </form></body></html>
            """
    }
}
