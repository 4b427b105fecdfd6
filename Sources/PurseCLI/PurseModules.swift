import ChippiPayService
import ChipsService
import ConnectService
import CutiEService
import NexusService
import PurseDatabase
import PurseServer

/// The services `purse serve` mounts, in the order `GET /` lists them.
public enum PurseModules {
    public static func all(configuration: PurseConfiguration) throws -> [any PurseModule] {
        [
            NexusModule(configuration: try NexusConfiguration.from(configuration)),
            ConnectModule(configuration: try ConnectConfiguration.from(configuration)),
            ChippiPayModule(configuration: try ChippiPayConfiguration.from(configuration)),
            CutiEModule(configuration: try CutiEConfiguration.from(configuration)),
            ChipsModule(configuration: try ChipsConfiguration.from(configuration)),
        ]
    }
}
