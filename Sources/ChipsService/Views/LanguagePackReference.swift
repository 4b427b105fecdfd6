/// Labels for the reference views the MyCHIPs app registers at start-up for their column texts
/// (`base.comm_v_flat`, `base.addr_v`, `base.addr_v_flat`, `base.exchange`,
/// `mychips.users_v_tallies`, `mychips.lifts_v_pay_me`), and for the ones this provider serves (`base.country_v`,
/// `base.currency`, `mychips.comm_v_me`, `mychips.addr_v_me`, `mychips.file_v_me`), with the
/// labels of enumerated columns' values.
extension LanguagePack {
    static let referenceEntries: [Entry] = commEntries + addressEntries + exchangeEntries + summaryEntries + fileEntries + liftEntries

    /// `(medium, English, Spanish)`: the media of a connection.
    static let media: [(String, String, String)] = [
        ("phone", "Phone", "Teléfono"), ("email", "Email", "Correo"), ("cell", "Mobile", "Móvil"), ("fax", "Fax", "Fax"),
        ("text", "Text Messages", "Mensajes de texto"), ("web", "Website", "Sitio web"), ("pager", "Pager", "Buscapersonas"),
        ("other", "Other", "Otro"),
    ]

    /// `(type, English, Spanish)`: the kinds of address.
    static let addressTypes: [(String, String, String)] = [
        ("phys", "Physical", "Física"), ("mail", "Mailing", "Postal"), ("bill", "Billing", "Facturación"), ("ship", "Shipping", "Envío"),
        ("birth", "Birth Place", "Donde nació"),
    ]

    /// `(type, English, Spanish)`: the kinds of file.
    static let fileTypes: [(String, String, String)] = [
        ("photo", "Photo", "Foto"), ("bio", "Biography", "Biografía"), ("id", "Identification", "Identificación"),
        ("cert", "Certificate", "Certificado"), ("other", "Other", "Otro"),
    ]

    /// `(value, English, Spanish)` labels of the enumerated columns, by view and column.
    static let valueLabels: [String: [String: [(String, String, String)]]] = {
        let tally: [String: [(String, String, String)]] = [
            "tally_type": [("stock", "Stock (you are owed)", "Stock (le deben)"), ("foil", "Foil (you owe)", "Foil (usted debe)")],
            "status": [("void", "Void", "Anulada"), ("draft", "Draft", "Borrador"), ("offer", "Offered", "Ofrecida"), ("open", "Open", "Abierta"),
                       ("close", "Closed", "Cerrada")],
            // A change one side asked for, until the other answers.
            "request": [("void", "Withdraw it", "Retirarla"), ("draft", "Back to draft", "Volver a borrador"), ("offer", "Offer it", "Ofrecerla"),
                        ("open", "Open it", "Abrirla"), ("close", "Close it", "Cerrarla")],
            // Whether both copies of the chit chain agree.
            "chain_stat": [("non", "Not compared", "Sin comparar"), ("aff", "Agreed", "De acuerdo"), ("pen", "Being compared", "Comparándose"),
                           ("con", "Disagreement", "Desacuerdo"), ("err", "Broken", "Rota")],
            // The members of the JSON columns, as MyCHIPs labels them.
            "contract": [("name", "Name", "Nombre"), ("host", "Publisher", "Editor"), ("source", "Where to find it", "Dónde encontrarlo")],
            "hold_cert": [("chad", "CHIP address", "Dirección CHIP"), ("date", "Issued", "Emitido"), ("name", "Name", "Nombre")],
            "hold_terms": [("limit", "Most owed", "Máximo adeudado"), ("call", "Days' notice", "Días de aviso")],
            "part_terms": [("limit", "Most owed", "Máximo adeudado"), ("call", "Days' notice", "Días de aviso")],
        ]
        let chit: [String: [(String, String, String)]] = [
            "chit_type": [("tran", "Transaction", "Transacción"), ("lift", "Lift", "Elevación"), ("set", "Setting", "Ajuste")],
            "status": [("void", "Void", "Anulado"), ("pend", "Pending", "Pendiente"), ("good", "Good", "Válido")],
        ]
        return [
            "mychips.comm_v_me": ["comm_type": media], "mychips.addr_v_me": ["addr_type": addressTypes], "base.addr_v": ["addr_type": addressTypes],
            "mychips.file_v_me": ["file_type": fileTypes], "mychips.tallies_v_me": tally, "mychips.tallies": tally,
            "mychips.chits_v_me": chit, "mychips.chits": chit,
        ]
    }()

    static let fileEntries: [Entry] = [
        Entry(obj: "mychips.file_v_me", language: "eng", title: "My Files", help: "Your photo and documents; the main public ones are part of your certificate",
              columns: [
                  ("file_seq", "Number", "Which of your files this is"), ("file_type", "Type", "Photo, biography, identification, certificate or other"),
                  ("file_data", "Data", "The file itself"), ("file_fmt", "Format", "The file's MIME type (image/jpeg …)"),
                  ("file_cmt", "Comment", "A note about the file"), ("file_priv", "Private", "Kept out of your certificate"),
                  ("file_prim", "Main", "The one of its type your certificate shows"), ("file_size", "Size", "The file's size in bytes"),
                  ("digest", "Digest", "The file's SHA-256 hash, by which partners fetch it"),
              ], messages: [("IMG", "Not a Picture", "The photo must be a JPEG, PNG or GIF image of the format it is sent as, at most 4096 pixels a side"),
                            ("NPH", "No Picture", "The photo action takes the picture as data.fields.file_data")]),
        Entry(obj: "mychips.file_v_me", language: "spa", title: "Mis archivos", help: "Su foto y sus documentos; los principales públicos forman parte de su certificado",
              columns: [
                  ("file_seq", "Número", "Cuál de sus archivos es este"), ("file_type", "Tipo", "Foto, biografía, identificación, certificado u otro"),
                  ("file_data", "Datos", "El archivo en sí"), ("file_fmt", "Formato", "El tipo MIME del archivo (image/jpeg …)"),
                  ("file_cmt", "Comentario", "Una nota sobre el archivo"), ("file_priv", "Privado", "Fuera de su certificado"),
                  ("file_prim", "Principal", "El de su tipo que muestra su certificado"), ("file_size", "Tamaño", "El tamaño del archivo en bytes"),
                  ("digest", "Resumen", "El hash SHA-256 del archivo, con el que sus socios lo obtienen"),
              ], messages: [("IMG", "No es una imagen", "La foto debe ser una imagen JPEG, PNG o GIF del formato con que se envía, de 4096 píxeles por lado como máximo"),
                            ("NPH", "Sin imagen", "La acción photo recibe la imagen en data.fields.file_data")]),
    ]

    /// `mychips.lifts_v_pay_me`: the app takes its Request page's and chit page's button texts
    /// (`accept`, `reject`, `request` …) from here.
    static let liftEntries: [Entry] = [
        Entry(obj: "mychips.lifts_v_pay_me", language: "eng", title: "My Payments", help: "Payments to and from people you have no tally with",
              columns: [("id", "User ID", "Whose payment this is"), ("net", "Net", "What the payment adds to your balance"),
                        ("memo", "Memo", "A note about the payment"), ("reference", "Reference", "Data the payee's software reads")],
              messages: [("address", "Payment Address", "A link or QR code others pay you by"),
                         ("payreq", "Payment Request", "What someone with no tally with you needs to pay you"),
                         ("accept", "Approve Payment", "Pay what is asked"), ("reject", "Reject Payment", "Decline what is asked"),
                         ("request", "Request Payment", "Ask for a payment by QR code or link")]),
        Entry(obj: "mychips.lifts_v_pay_me", language: "spa", title: "Mis pagos", help: "Pagos a y de personas con las que no tiene cuenta",
              columns: [("id", "Usuario", "De quién es este pago"), ("net", "Neto", "Lo que el pago suma a su saldo"),
                        ("memo", "Nota", "Una nota sobre el pago"), ("reference", "Referencia", "Datos que lee el programa del beneficiario")],
              messages: [("address", "Dirección de pago", "Un enlace o código QR con el que otros le pagan"),
                         ("payreq", "Solicitud de pago", "Lo que necesita quien no tiene cuenta con usted para pagarle"),
                         ("accept", "Aprobar pago", "Pagar lo que se pide"), ("reject", "Rechazar pago", "Rechazar lo que se pide"),
                         ("request", "Solicitar pago", "Pedir un pago con un código QR o un enlace")]),
    ]

    static let commEntries: [Entry] = [
        Entry(obj: "base.comm_v_flat", language: "eng", title: "Contact Points", help: "The primary contact point of each kind",
              columns: media.map { ($0.0 + "_comm", $0.1, "Your primary \($0.1.lowercased()) contact") }, messages: []),
        Entry(obj: "base.comm_v_flat", language: "spa", title: "Contactos", help: "El contacto principal de cada tipo",
              columns: media.map { ($0.0 + "_comm", $0.2, "Su contacto principal: \($0.2.lowercased())") }, messages: []),
        Entry(obj: "mychips.comm_v_me", language: "eng", title: "My Contact Points", help: "The ways you can be reached, as your certificate lists them",
              columns: [
                  ("comm_seq", "Number", "Which of your contact points this is"), ("comm_type", "Medium", "Phone, email, mobile, web …"),
                  ("comm_spec", "Address", "The number or address itself"), ("comm_cmt", "Comment", "Your remark on this way of reaching you"),
                  ("comm_prim", "Primary", "The first of its kind: the one shown"), ("comm_inact", "Inactive", "No longer in use"),
              ], messages: []),
        Entry(obj: "mychips.comm_v_me", language: "spa", title: "Mis contactos", help: "Cómo contactarle, tal como lo lista su certificado",
              columns: [
                  ("comm_seq", "Número", "Cuál de sus contactos es este"), ("comm_type", "Medio", "Teléfono, correo, móvil, web …"),
                  ("comm_spec", "Dirección", "El número o la dirección"), ("comm_cmt", "Comentario", "Una nota sobre este contacto"),
                  ("comm_prim", "Principal", "El primero de su tipo: el que se muestra"), ("comm_inact", "Inactivo", "Ya no se usa"),
              ], messages: []),
    ]

    static let addressEntries: [Entry] = {
        let parts: [(String, String, String)] = [("addr", "Address", "Dirección"), ("city", "City", "Ciudad"), ("state", "State", "Estado"),
                                                 ("pcode", "Postal Code", "Código postal"), ("country", "Country", "País")]
        let rows: [(String, String, String)] = [
            ("addr_seq", "Number", "Número"), ("addr_type", "Type", "Tipo"), ("addr_spec", "Street Address", "Calle y número"), ("city", "City", "Ciudad"),
            ("state", "State", "Estado"), ("pcode", "Postal Code", "Código postal"), ("country", "Country", "País"), ("addr_cmt", "Comment", "Comentario"),
            ("addr_prim", "Primary", "Principal"), ("addr_inact", "Inactive", "Inactiva"),
        ]
        var entries: [Entry] = []
        for (obj, english, spanish) in [("base.addr_v", "Addresses", "Direcciones"), ("mychips.addr_v_me", "My Addresses", "Mis direcciones")] {
            entries.append(Entry(obj: obj, language: "eng", title: english, help: "Mailing, physical, billing and shipping addresses",
                                 columns: rows.map { ($0.0, $0.1, $0.1) }, messages: []))
            entries.append(Entry(obj: obj, language: "spa", title: spanish, help: "Direcciones postal, física, de facturación y de envío",
                                 columns: rows.map { ($0.0, $0.2, $0.2) }, messages: []))
        }
        entries.append(Entry(obj: "base.addr_v_flat", language: "eng", title: "Primary Addresses", help: "The primary address of each kind",
                             columns: addressTypes.flatMap { type in parts.map { ("\(type.0)_\($0.0)", "\(type.1) \($0.1)", "\($0.1) of your \(type.1.lowercased()) address") } },
                             messages: []))
        entries.append(Entry(obj: "base.addr_v_flat", language: "spa", title: "Direcciones principales", help: "La dirección principal de cada tipo",
                             columns: addressTypes.flatMap { type in parts.map { ("\(type.0)_\($0.0)", "\($0.2) (\(type.2.lowercased()))", "\($0.2) de su dirección: \(type.2.lowercased())") } },
                             messages: []))
        return entries
    }()

    static let exchangeEntries: [Entry] = [
        Entry(obj: "base.exchange", language: "eng", title: "Exchange Rates", help: "What a unit of one currency is worth in another, as sampled",
              columns: [("curr", "Currency", "The currency priced"), ("base", "Base", "The currency the price is in"),
                        ("rate", "Rate", "Units of the base per unit of the currency"), ("sample", "Sampled", "When the rate was read")], messages: []),
        Entry(obj: "base.exchange", language: "spa", title: "Tipos de cambio", help: "Lo que vale una unidad de una moneda en otra, según la muestra",
              columns: [("curr", "Moneda", "La moneda cotizada"), ("base", "Base", "La moneda en que se da el precio"),
                        ("rate", "Tipo", "Unidades de la base por unidad de la moneda"), ("sample", "Muestra", "Cuándo se leyó el tipo")], messages: []),
        Entry(obj: "base.currency", language: "eng", title: "Currencies", help: "The currencies of the world (ISO 4217)",
              columns: [("cur_code", "Code", "The currency's three-letter code"), ("cur_name", "Name", "The currency's name")], messages: []),
        Entry(obj: "base.currency", language: "spa", title: "Monedas", help: "Las monedas del mundo (ISO 4217)",
              columns: [("cur_code", "Código", "El código de tres letras de la moneda"), ("cur_name", "Nombre", "El nombre de la moneda")], messages: []),
        Entry(obj: "base.country_v", language: "eng", title: "Countries", help: "The countries of the world (ISO 3166)",
              columns: [("co_code", "Code", "The country's two-letter code"), ("co_name", "Name", "The country's name"),
                        ("cur_code", "Currency", "The country's currency")], messages: []),
        Entry(obj: "base.country_v", language: "spa", title: "Países", help: "Los países del mundo (ISO 3166)",
              columns: [("co_code", "Código", "El código de dos letras del país"), ("co_name", "Nombre", "El nombre del país"),
                        ("cur_code", "Moneda", "La moneda del país")], messages: []),
    ]

    static let summaryEntries: [Entry] = [
        Entry(obj: "mychips.users_v_tallies", language: "eng", title: "Tally Summary", help: "Each user's open tallies, totalled",
              columns: [("count", "Tallies", "How many tallies are open or offered"), ("net", "Net", "The balance over all tallies"),
                        ("asset", "Assets", "What partners owe you"), ("assets", "Asset Tallies", "Tallies on which you are owed"),
                        ("liab", "Liabilities", "What you owe partners"), ("liabs", "Liability Tallies", "Tallies on which you owe"),
                        ("latest", "Latest", "When a tally last changed"), ("tallies", "Tallies", "The tallies themselves")], messages: []),
        Entry(obj: "mychips.users_v_tallies", language: "spa", title: "Resumen de tallies", help: "Las cuentas abiertas de cada usuario, sumadas",
              columns: [("count", "Tallies", "Cuántas cuentas están abiertas u ofrecidas"), ("net", "Neto", "El saldo de todas las cuentas"),
                        ("asset", "Activos", "Lo que le deben sus socios"), ("assets", "Cuentas activas", "Cuentas en que le deben"),
                        ("liab", "Pasivos", "Lo que usted debe a sus socios"), ("liabs", "Cuentas pasivas", "Cuentas en que usted debe"),
                        ("latest", "Último cambio", "Cuándo cambió una cuenta por última vez"), ("tallies", "Cuentas", "Las cuentas en sí")], messages: []),
    ]
}
