/// The one version of Purse: what `purse --version` prints, `GET /` reports, and the clients'
/// `User-Agent` carries.
public enum PurseVersion {
    public static let current = "0.1.0"
}
