import PurseFormats

/// The language pack the provider ships: for each view the app shows (and `mychips.chark`, the app's own
/// texts, as MyCHIPs' CHARK app has them) a title, help, column labels and messages, in English
/// and Spanish. It is loaded into `chips_lang` when the provider starts; a language added there
/// (rows for `chips_languages` and `chips_lang`) reaches every client without a client change,
/// since clients ask for labels by view and language.
enum LanguagePack {
    struct Entry {
        var obj: String
        var language: String
        var title: String
        var help: String
        /// `(column, title, help)`
        var columns: [(String, String, String)]
        /// `(code, title, help)`
        var messages: [(String, String, String)]

        /// Each column as `wm.table_lang` has it: `{col, title, help, values}`, `values` the
        /// labels of an enumerated column's values (`{value, title, help}`, by value), else null.
        var columnsJSON: JSONValue {
            let labels = LanguagePack.valueLabels[obj] ?? [:]
            return .array(columns.map { column in
                let values: JSONValue = labels[column.0].map { list in
                    .array(list.sorted { $0.0 < $1.0 }.map { value in
                        let title = language == "spa" ? value.2 : value.1
                        return .object(["value": .string(value.0), "title": .string(title), "help": .string(title)])
                    })
                } ?? .null
                return .object(["col": .string(column.0), "title": .string(column.1), "help": .string(column.2), "values": values])
            })
        }

        var messagesJSON: JSONValue {
            .array(messages.map { .object(["code": .string($0.0), "title": .string($0.1), "help": .string($0.2)]) })
        }
    }

    /// `(code, iso_2, eng_name, name)`
    static let languages: [(String, String, String, String)] = [
        ("eng", "en", "English", "English"),
        ("spa", "es", "Spanish", "Español"),
    ]

    static let entries: [Entry] = profileEntries + walletEntries + tableEntries + referenceEntries

    /// The tables under the views (`mychips.tallies`, `mychips.chits`), which the app also asks
    /// for: the same texts as their `_v_me` views.
    static let tableEntries: [Entry] = walletEntries.compactMap { entry in
        guard entry.obj.hasSuffix("_v_me"), ["mychips.tallies_v_me", "mychips.chits_v_me"].contains(entry.obj) else { return nil }
        var table = entry
        table.obj = String(entry.obj.dropLast("_v_me".count))
        return table
    }

    static let profileEntries: [Entry] = [
        Entry(obj: "mychips.users_v_me", language: "eng", title: "My Profile", help: "Your own user record and the CHIP certificate it makes",
              columns: [
                  ("id", "Entity ID", "The provider's id of your record"),
                  ("username", "Username", "The name you log in with"),
                  ("peer_cuid", "Your CHIP ID", "Your id within your agent: the first part of your CHIP address"),
                  ("peer_agent", "Agent", "The agent that carries your tallies: the second part of your CHIP address"),
                  ("peer_host", "Host", "Where your agent is reached"),
                  ("peer_port", "Port", "The port your agent listens on"),
                  ("ent_type", "Entity Type", "p for a person, o for an organization"),
                  ("ent_name", "Surname", "Your family name, or an organization's name"),
                  ("fir_name", "First Name", "Your given name"),
                  ("std_name", "Standard Name", "Your name as lists show it"),
                  ("born_date", "Birth Date", "Your date of birth (YYYY-MM-DD)"),
                  ("country", "Country", "Your country of citizenship (two-letter code)"),
                  ("tax_id", "Tax ID", "Your national identification number"),
                  ("connect", "Connections", "Ways to reach you: email, phone, web"),
                  ("place", "Addresses", "Your mailing and physical addresses"),
                  ("conn_pub", "Connection Key", "The public key this device logs in with"),
                  ("user_psig", "Signing Key", "The public key your tallies and chits are signed with"),
                  ("language", "Language", "The language the app shows you"),
                  ("cert", "Certificate", "Your CHIP certificate as your partners see it"),
                  ("crt_date", "Created", "When your record was made"),
                  ("mod_date", "Modified", "When your record last changed"),
              ],
              messages: [
                  ("GCH", "CHIP Value Unavailable", "The CHIP's estimated value could not be fetched just now"),
                  ("INV", "Invoice", "Open this link to pay the person who sent it"),
                  ("graph", "Tally Chart", "Draw your tallies and their balances as a picture"),
                  ("graph.format", "Chart Form", "What the chart comes back as"),
                  ("graph.format.html", "html", "A piece of HTML holding the chart"),
                  ("graph.format.url", "url", "A link to a page showing the chart"),
                  ("chip", "CHIP Value", "Estimate what a CHIP is worth in an ordinary currency"),
                  ("chip.format", "Value Form", "What the estimate comes back as"),
                  ("chip.format.html", "html", "A piece of HTML showing the estimate"),
                  ("chip.format.json", "json", "A JSON record with the exchange rate"),
                  ("chip.curr", "Currency", "The currency code the estimate is given in"),
                  ("invoice", "Ask for Payment", "Make a link or QR code that someone can pay you with"),
                  ("invoice.units", "Amount", "How much you ask for, in milliCHIPs"),
                  ("invoice.memo", "Note", "A message the payer reads with the request"),
                  ("invoice.ref", "Reference", "Data that comes back to you with the payment"),
                  ("invoice.format", "Invoice Form", "What the invoice comes back as"),
                  ("invoice.format.qr", "qr", "A QR code to scan"),
                  ("invoice.format.link", "link", "A link that opens the wallet app"),
                  ("invoice.format.json", "json", "The invoice as a JSON object"),
                  ("launch.title", "Your Record", "Your own user record at this provider"),
                  ("launch.instruct", "How This View Works", "This view holds one row only: yours, as the connected user"),
                  ("BDT", "Bad Date", "A birth date must be a real day, written YYYY-MM-DD"),
                  ("CTY", "Bad Country", "A country is two capital letters (ISO 3166)"),
                  ("NAM", "Name Required", "Your record needs a surname or an organization name"),
                  ("CON", "Bad Connection", "Each connection needs a medium (email, phone, cell, web, text) and an address"),
                  ("PLA", "Bad Address", "Each address needs a type (mail, phys, bill, ship) and a street address"),
              ]),
        Entry(obj: "mychips.users_v_me", language: "spa", title: "Mi perfil", help: "Su registro de usuario y el certificado CHIP que lo forma",
              columns: [
                  ("id", "Número de registro", "El identificador de su registro en el proveedor"),
                  ("username", "Usuario", "El nombre con el que inicia sesión"),
                  ("peer_cuid", "Su ID CHIP", "Su identificador en su agente: la primera parte de su dirección CHIP"),
                  ("peer_agent", "Agente", "El agente que lleva sus cuentas: la segunda parte de su dirección CHIP"),
                  ("peer_host", "Servidor", "Dónde se encuentra su agente"),
                  ("peer_port", "Puerto", "El puerto en el que escucha su agente"),
                  ("ent_type", "Clase de titular", "p para una persona, o para una organización"),
                  ("ent_name", "Apellido", "Su apellido, o el nombre de una organización"),
                  ("fir_name", "Nombre", "Su nombre de pila"),
                  ("std_name", "Nombre estándar", "Su nombre como aparece en las listas"),
                  ("born_date", "Nacido el", "Su fecha de nacimiento (AAAA-MM-DD)"),
                  ("country", "País", "Su país de ciudadanía (código de dos letras)"),
                  ("tax_id", "Número fiscal", "Su número de identificación nacional"),
                  ("connect", "Contactos", "Cómo contactarle: correo, teléfono, web"),
                  ("place", "Direcciones", "Sus direcciones postal y física"),
                  ("conn_pub", "Clave de conexión", "La clave pública con la que este dispositivo inicia sesión"),
                  ("user_psig", "Clave de firma", "La clave pública con la que se firman sus cuentas y pagos"),
                  ("language", "Idioma", "El idioma en que la aplicación se muestra"),
                  ("cert", "Certificado", "Su certificado CHIP tal como lo ven sus socios"),
                  ("crt_date", "Creado", "Cuándo se creó su registro"),
                  ("mod_date", "Modificado", "Cuándo cambió su registro por última vez"),
              ],
              messages: [
                  ("GCH", "Valor del CHIP no disponible", "No se pudo obtener ahora el valor estimado del CHIP"),
                  ("INV", "Factura", "Abra este enlace para pagar a quien lo envió"),
                  ("graph", "Gráfico de cuentas", "Dibuja sus cuentas y sus saldos como una imagen"),
                  ("graph.format", "Forma del gráfico", "Cómo se devuelve el gráfico"),
                  ("graph.format.html", "html", "Un trozo de HTML con el gráfico"),
                  ("graph.format.url", "url", "Un enlace a una página que muestra el gráfico"),
                  ("chip", "Valor del CHIP", "Estima cuánto vale un CHIP en una moneda corriente"),
                  ("chip.format", "Forma del valor", "Cómo se devuelve la estimación"),
                  ("chip.format.html", "html", "Un trozo de HTML que muestra la estimación"),
                  ("chip.format.json", "json", "Un registro JSON con el tipo de cambio"),
                  ("chip.curr", "Moneda", "El código de la moneda en que se da la estimación"),
                  ("invoice", "Pedir un pago", "Crea un enlace o código QR con el que alguien puede pagarle"),
                  ("invoice.units", "Cantidad", "Cuánto pide, en miliCHIPs"),
                  ("invoice.memo", "Nota", "Un mensaje que quien paga lee con la solicitud"),
                  ("invoice.ref", "Referencia", "Datos que le vuelven con el pago"),
                  ("invoice.format", "Forma de la factura", "Cómo se devuelve la factura"),
                  ("invoice.format.qr", "qr", "Un código QR para escanear"),
                  ("invoice.format.link", "link", "Un enlace que abre la aplicación de cartera"),
                  ("invoice.format.json", "json", "La factura como objeto JSON"),
                  ("launch.title", "Su registro", "Su propio registro de usuario en este proveedor"),
                  ("launch.instruct", "Cómo funciona esta vista", "Esta vista tiene una sola fila: la suya, como usuario conectado"),
                  ("BDT", "Fecha incorrecta", "La fecha de nacimiento debe ser un día real, escrito AAAA-MM-DD"),
                  ("CTY", "País incorrecto", "Un país son dos letras mayúsculas (ISO 3166)"),
                  ("NAM", "Nombre obligatorio", "Su registro necesita un apellido o el nombre de una organización"),
                  ("CON", "Contacto incorrecto", "Cada contacto necesita un medio (email, phone, cell, web, text) y una dirección"),
                  ("PLA", "Dirección incorrecta", "Cada dirección necesita un tipo (mail, phys, bill, ship) y una calle"),
              ]),
        Entry(obj: "base.language_v", language: "eng", title: "Languages", help: "The languages this provider can show the app in",
              columns: [
                  ("code", "Code", "The ISO 639-2 code of the language"),
                  ("iso_2", "Short Code", "The ISO 639-1 code of the language"),
                  ("eng_name", "English Name", "The language's name in English"),
                  ("name", "Name", "The language's name in itself"),
                  ("tables", "Translated Views", "How many views have labels in this language"),
              ],
              messages: []),
        Entry(obj: "base.language_v", language: "spa", title: "Idiomas", help: "Los idiomas en que este proveedor puede mostrar la aplicación",
              columns: [
                  ("code", "Código", "El código ISO 639-2 del idioma"),
                  ("iso_2", "Código corto", "El código ISO 639-1 del idioma"),
                  ("eng_name", "Nombre en inglés", "El nombre del idioma en inglés"),
                  ("name", "Nombre", "El nombre del idioma en sí mismo"),
                  ("tables", "Vistas traducidas", "Cuántas vistas tienen etiquetas en este idioma"),
              ],
              messages: []),
        Entry(obj: "mychips.chark", language: "eng", title: "Wallet App Texts", help: "The words the wallet app shows, by code",
              columns: [("always", "Always", "A column whose value is always true")], messages: appMessages.map { ($0.code, $0.eng.0, $0.eng.1) }),
        Entry(obj: "mychips.chark", language: "spa", title: "Textos de la cartera", help: "Las palabras que muestra la aplicación de cartera, por código",
              columns: [("always", "Siempre", "Una columna cuyo valor es siempre verdadero")], messages: appMessages.map { ($0.code, $0.spa.0, $0.spa.1) }),
    ]
}

extension LanguagePack {
    /// The words of the tickets and invitations named actions return, in the user's language.
    struct ActionTexts: Sendable {
        var invitation: String
        var connection: String
        var validUntil: String
        var openLink: String
        var unknownFormat: String
    }

    static func actionTexts(language: String) -> ActionTexts {
        switch language {
        case "spa":
            ActionTexts(invitation: "Invitación a un tally", connection: "Conexión a su proveedor", validUntil: "Válido hasta",
                        openLink: "Abra este enlace para ver el tally", unknownFormat: "Formato desconocido")
        default:
            ActionTexts(invitation: "Invitation to a tally", connection: "Connection to your provider", validUntil: "Valid until",
                        openLink: "Open this link to see the tally", unknownFormat: "Unknown format")
        }
    }
}
