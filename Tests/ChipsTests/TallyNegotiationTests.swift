import ChipsProtocol
import MyCHIPs
import PurseFormats
import Testing

/// The tally negotiation's rules, without a provider.
@Suite("MyCHIPs: tally negotiation state machine")
struct TallyNegotiationTests {
    func tally(_ state: TallyState, status: TallyStatus) throws -> ChipsTally {
        let core = TallyCore(uuid: "u-1", date: 1_700_000_000_000, memo: nil, agree: .null,
                             stock: .init(cert: .null, terms: .null), foil: .init(cert: .null, terms: .null))
        return try ChipsTally(row: .object([
            "tally_seq": .int(1), "tally_uuid": "u-1", "tally_type": "stock", "json_core": core.json,
            "status": .string(status.rawValue), "state": .string(state.rawValue),
        ]))
    }

    @Test func eachStateAllowsItsActions() {
        #expect(TallyNegotiation.actions(in: .draft) == [.invite, .reject])
        #expect(TallyNegotiation.actions(in: .partnerDraft) == [.offer, .reject])
        #expect(TallyNegotiation.actions(in: .holderOffer) == [.reject])
        #expect(TallyNegotiation.actions(in: .partnerOffer) == [.accept, .counter, .reject])
        #expect(TallyNegotiation.actions(in: .open) == [.close])
        #expect(TallyNegotiation.actions(in: .closing).isEmpty && TallyNegotiation.actions(in: .void).isEmpty)
    }

    @Test func anOfferIsAcceptedAndTheTallyOpens() throws {
        var machine = TallyNegotiation()
        #expect(machine.handle(.chose(.accept)) == [], "nothing is sent before the tally is loaded")
        #expect(machine.failure?.kind == .invalidLink)
        _ = machine.handle(.loaded(try tally(.partnerOffer, status: .offer)))
        #expect(machine.step == .ready && machine.actions == [.accept, .counter, .reject])
        #expect(machine.handle(.chose(.accept)) == [.signAndAccept])
        #expect(machine.step == .performing(.accept) && machine.actions.isEmpty)
        #expect(machine.handle(.chose(.reject)) == [] && machine.step == .performing(.accept), "one action at a time")
        _ = machine.handle(.changed(try tally(.open, status: .open)))
        #expect(machine.tally?.state == .open && machine.actions == [.close])
    }

    @Test func anActionTheStateDoesNotAllowNeverReachesTheProvider() throws {
        var machine = TallyNegotiation()
        _ = machine.handle(.loaded(try tally(.holderOffer, status: .offer)))
        #expect(machine.handle(.chose(.accept)) == [])
        guard case .refused(.accept, let error) = machine.step else { Issue.record("not refused: \(machine.step)"); return }
        #expect(error.kind == .invalidLink)
        #expect(machine.handle(.chose(.reject)) == [.reject], "an allowed action after a refusal goes")
    }

    @Test func aFailureLeavesTheTallyAsItWas() throws {
        var machine = TallyNegotiation()
        let draft = try tally(.draft, status: .draft)
        _ = machine.handle(.loaded(draft))
        #expect(machine.handle(.chose(.invite)) == [.makeInvitation])
        _ = machine.handle(.failed(.offline))
        #expect(machine.step == .refused(.invite, .offline) && machine.tally == draft && machine.invite == nil)
        #expect(machine.actions == [.invite, .reject])
        _ = machine.handle(.changed(try tally(.open, status: .open)))
        #expect(machine.tally == draft, "a late answer with no action on its way changes nothing")
    }
}
