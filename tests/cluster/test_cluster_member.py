# SPDX-License-Identifier: Apache-2.0
"""ClusterMember: parsing the members string as Java does, encoding it back, the ingress endpoints string,
toString as ClusterTool list-members prints it, the quorum arithmetic and election helpers, and the consensus
publications' channels."""
import pytest

from aeron.cluster.cluster_member import ClusterMember
from aeron.common.channel_uri import ChannelUri
from aeron.common.errors import ClusterError, RegistrationError
from tests.cluster.conftest import expected

GOLDEN_MEMBERS = "0,127.0.0.1:9002,127.0.0.1:9003,127.0.0.1:9004,127.0.0.1:9005,127.0.0.1:9001|"
THREE = "|".join(f"{i},h{i}:1,h{i}:2,h{i}:3,h{i}:4,h{i}:5" for i in range(3))


def test_the_golden_members_string_parses_and_prints_as_list_members():
    (member,) = ClusterMember.parse(GOLDEN_MEMBERS)          # Java's split drops the trailing empty member
    assert (member.id, member.ingress_endpoint, member.consensus_endpoint, member.log_endpoint,
            member.catchup_endpoint, member.archive_endpoint) == \
        (0, "127.0.0.1:9002", "127.0.0.1:9003", "127.0.0.1:9004", "127.0.0.1:9005", "127.0.0.1:9001")
    member.is_leader, member.leadership_term_id, member.log_position = True, 0, 736
    member.time_of_last_append_position_ns = 1795335495656000000
    line = expected("live/clustertool-list-members.txt")
    assert f"activeMembers=[{member!r}]" in line
    assert ClusterMember.encode_as_string([member]) == GOLDEN_MEMBERS[:-1]
    assert ClusterMember.ingress_endpoints([member]) == "0=127.0.0.1:9002"


def test_optional_response_endpoints_and_the_encoded_string():
    members = ClusterMember.parse("1,a:1,a:2,a:3,a:4,a:5,a:6|2,b:1,b:2,b:3,b:4,b:5,b:6,b:7")
    assert (members[0].archive_response_endpoint, members[0].egress_response_endpoint) == ("a:6", None)
    assert (members[1].archive_response_endpoint, members[1].egress_response_endpoint) == ("b:6", "b:7")
    assert ClusterMember.encode_as_string(members) == "1,a:1,a:2,a:3,a:4,a:5,a:6|2,b:1,b:2,b:3,b:4,b:5,b:6,b:7"
    assert ClusterMember.ingress_endpoints(members) == "1=a:1,2=b:1"
    assert ClusterMember.parse("") == [] and ClusterMember.parse(None) == []


@pytest.mark.parametrize("value", ["0,a,b,c,d", "0,a,b,c,d,e,f,g,h", "x,a,b,c,d,e", "1_0,a,b,c,d,e",
                                   "99999999999,a,b,c,d,e"])
def test_bad_members_are_refused(value):
    with pytest.raises(ClusterError):
        ClusterMember.parse(value)


def test_endpoints_of_this_member():
    member = ClusterMember.parse_endpoints(-1, "i:1,c:2,l:3,u:4,a:5")
    assert (member.ingress_endpoint, member.archive_endpoint, member.endpoints) == ("i:1", "a:5",
                                                                                   "i:1,c:2,l:3,u:4,a:5")
    with pytest.raises(ClusterError, match="invalid member value"):
        ClusterMember.parse_endpoints(-1, "i:1,c:2")
    members = ClusterMember.parse(THREE)
    assert ClusterMember.determine_member(members, 1, "").id == 1
    assert ClusterMember.determine_member(members, 1, "h1:1,h1:2,h1:3,h1:4,h1:5").id == 1
    with pytest.raises(ClusterError, match="clusterMembers and endpoints differ"):
        ClusterMember.determine_member(members, 1, "h1:1,h1:2,h1:3,h1:4,x:5")
    with pytest.raises(ClusterError, match="memberId=7 not found"):
        ClusterMember.determine_member(members, 7, "")
    assert ClusterMember.determine_member([], -1, "i:1,c:2,l:3,u:4,a:5").id == -1


def test_quorum_arithmetic():
    assert [ClusterMember.quorum_threshold(n) for n in range(1, 7)] == [1, 2, 2, 3, 3, 4]
    members = ClusterMember.parse(THREE)
    now, timeout = 1_000, 100
    for member, (seen, position) in zip(members, [(950, 300), (990, 200), (800, 400)], strict=True):
        member.time_of_last_append_position_ns, member.log_position, member.leadership_term_id = seen, position, 2
    assert ClusterMember.has_active_quorum(members, now, timeout)
    ranked = [0] * ClusterMember.quorum_threshold(len(members))
    assert ClusterMember.quorum_position(members, ranked, now, timeout) == 200     # member 2 is not active
    assert ClusterMember.has_quorum_at_position(members, 2, 200, now, timeout)
    assert not ClusterMember.has_quorum_at_position(members, 2, 250, now, timeout)
    assert not ClusterMember.has_quorum_at_position(members, 3, 100, now, timeout)
    members[1].time_of_last_append_position_ns = 0
    assert not ClusterMember.has_active_quorum(members, now, timeout)


def test_votes_and_candidates():
    members = ClusterMember.parse(THREE)
    ClusterMember.become_candidate(members, 5, 0)
    assert [(m.vote, m.candidate_term_id, m.is_ballot_sent) for m in members] == \
        [(True, 5, True), (None, -1, False), (None, -1, False)]
    assert not ClusterMember.is_quorum_leader(members, 5)
    members[1].vote, members[1].candidate_term_id = True, 5
    assert ClusterMember.is_quorum_leader(members, 5) and not ClusterMember.is_unanimous_leader(members, 5, -1)
    assert ClusterMember.is_unanimous_leader(members, 5, 2)          # the gracefully closed leader does not count
    members[2].vote, members[2].candidate_term_id = False, 5
    assert not ClusterMember.is_quorum_leader(members, 5)             # an explicit no among those who answered
    for member, (term, position) in zip(members, [(1, 100), (1, 50), (0, 900)], strict=True):
        member.leadership_term_id, member.log_position = term, position
    candidate = members[0]
    assert ClusterMember.is_unanimous_candidate(members, candidate, -1)
    assert not ClusterMember.is_unanimous_candidate(members, members[1], -1)
    assert ClusterMember.is_quorum_candidate(members, members[1])
    members[2].log_position = -1                                      # unknown log: would not vote
    assert not ClusterMember.is_unanimous_candidate(members, candidate, -1)
    assert ClusterMember.compare_log(members[0], members[1]) == 1
    assert ClusterMember.compare_log(1, 5, 1, 5) == 0 and ClusterMember.compare_log(0, 99, 1, 0) == -1
    with pytest.raises(TypeError):
        ClusterMember.compare_log(members[0], 1)
    ClusterMember.set_is_leader(members, 2)
    assert [m.is_leader for m in members] == [False, False, True]
    ClusterMember.reset_members(members)
    assert all(m.vote is None and m.log_position == -1 and not m.is_leader for m in members)
    assert ClusterMember.find_member(members, 2) is members[2] and ClusterMember.find_member(members, 9) is None


class FakeAeron:
    def __init__(self, refuse=()):
        self.refuse = refuse
        self.added = []

    def add_exclusive_publication(self, channel, stream_id):
        if any(r in channel for r in self.refuse):
            raise RegistrationError(f"refused {channel}")
        self.added.append((channel, stream_id))
        return FakePublication()


class FakePublication:
    closed = False

    def close(self):
        self.closed = True


def test_consensus_publications_go_to_each_other_member_with_a_control_endpoint():
    members = ClusterMember.parse(THREE)
    aeron, errors = FakeAeron(refuse=("h2:2",)), []
    ClusterMember.add_consensus_publications(members, members[0], "aeron:udp?term-length=64k", 108, True, aeron,
                                             errors.append)
    params = [(dict(ChannelUri.parse(channel).params), stream_id) for channel, stream_id in aeron.added]
    assert params == [({"term-length": "64k", "endpoint": "h1:2", "control": "h0:0"}, 108)]
    assert len(errors) == 1 and "failed to add consensus publication for member: 2" in str(errors[0])
    assert dict(ChannelUri.parse(members[2].consensus_channel).params) == {"term-length": "64k", "endpoint": "h2:2",
                                                                          "control": "h0:0"}
    aeron.refuse = ()
    ClusterMember.add_consensus_publication(members[0], members[2], "ignored", 108, False, aeron, errors.append)
    assert aeron.added[-1] == (members[2].consensus_channel, 108)
    publication = members[1].publication
    ClusterMember.close_consensus_publications(errors.append, members)
    assert publication.closed and members[1].publication is None
