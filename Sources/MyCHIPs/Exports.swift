// The records the client shares with the provider (tallies, chits, the chain, the balance sheet)
// are part of this library's interface.
@_exported import ChipsProtocol
