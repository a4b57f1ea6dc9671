"""A fourth search arm takes one folder and one registry entry: it then votes in a real Fuse.

The arm is written inside the test, into a temporary package: a servicer answering rulesage.v1.Arm with the
asked game's first live passages. Registering it (one ``Svc`` in ``rulesage.mesh.MESH``) is all fusion needs
to fan out to it, count its vote and derive the ceiling from four lists.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import grpc
import pytest

from rulesage import mesh
from rulesage.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc

pytestmark = pytest.mark.integration

ARM_SERVER = '''
"""A trivial arm: the asked game's first live passages in id order."""

import grpc

from rulesage.dbservice import DbService
from rulesage.v1 import arm_pb2, arm_pb2_grpc


class FirstPassagesArm(DbService, arm_pb2_grpc.ArmServicer):
    name = "firstpages"
    service_names = (arm_pb2.DESCRIPTOR.services_by_name["Arm"].full_name,)

    def register(self, server: grpc.aio.Server) -> None:
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)

    async def Search(self, request, context):
        game = await self.game(request.game)
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT p.id FROM live_passages p WHERE p.family_id = %s ORDER BY p.id LIMIT 5",
                (game.family_id,),
            )
            ids = [r[0] for r in await cur.fetchall()]
        return arm_pb2.ArmResult(
            arm=self.name,
            lanes=[self.name],
            hits=[
                arm_pb2.ArmHit(passage_id=i, rank=n, score=1.0 / n, lane=self.name)
                for n, i in enumerate(ids, 1)
            ],
        )
'''


@pytest.fixture()
def fourth_arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> mesh.Svc:
    package = tmp_path / "firstpages_arm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(textwrap.dedent(ARM_SERVER))
    monkeypatch.syspath_prepend(str(tmp_path))
    svc = mesh.Svc("firstpages", 50099, mesh.Role.ARM, "firstpages_arm.server:FirstPassagesArm")
    monkeypatch.setitem(mesh.MESH, svc.name, svc)
    yield svc
    sys.modules.pop("firstpages_arm.server", None)
    sys.modules.pop("firstpages_arm", None)


def test_a_registered_fourth_arm_votes_and_the_ceiling_counts_it(search_mesh, fourth_arm) -> None:
    from services.fusion.server import FusionService

    search_mesh.start(fourth_arm.name, fourth_arm.factory())
    try:
        addr = search_mesh.start("fusion-four-arms", FusionService)
        try:
            with grpc.insecure_channel(addr) as ch:
                res = fusion_pb2_grpc.FusionStub(ch).Fuse(
                    fusion_pb2.FuseRequest(
                        question="how do I win a game of klondike?", game="solitaire-klondike"
                    ),
                    timeout=30,
                )
        finally:
            search_mesh.stop("fusion-four-arms")
    finally:
        search_mesh.stop(fourth_arm.name)
    assert [a.arm for a in res.arms] == ["lexical", "dense", "aisle", "category", "firstpages"]
    assert all(a.state == common_pb2.STAGE_STATE_OK for a in res.arms), res.arms
    assert set(res.voted) == {"lexical", "dense", "aisle", "firstpages"}
    assert abs(res.ceiling - 4 / 61) < 1e-12
    voted_by_it = [p for p in res.passages if any(r.arm == "firstpages" for r in p.ranks)]
    assert voted_by_it, "the fourth arm's passages must carry its ranks"
    assert all(p.fused_score <= res.ceiling + 1e-9 for p in res.passages)
