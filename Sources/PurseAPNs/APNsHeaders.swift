import HTTPTypes

/// The header fields of an APNs request and answer, as Apple documents them ("Sending
/// notification requests to APNs"): the client writes them, the sandbox reads them.
extension HTTPField.Name {
    public static let apnsTopic = HTTPField.Name("apns-topic")!
    public static let apnsPushType = HTTPField.Name("apns-push-type")!
    public static let apnsPriority = HTTPField.Name("apns-priority")!
    public static let apnsExpiration = HTTPField.Name("apns-expiration")!
    public static let apnsID = HTTPField.Name("apns-id")!
    public static let apnsCollapseID = HTTPField.Name("apns-collapse-id")!
    public static let apnsUniqueID = HTTPField.Name("apns-unique-id")!
}
