"""engines.ddp.rank's stamped all-reduce hook: the gradients DDP ends with are the ranks' mean, as with DDP's own
default hook, and every bucket's all-reduce is stamped after the division (the collective alone)."""

from __future__ import annotations

import pytest

dist = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this torch has no gloo backend")


def _rank(rank: int, world: int, init: str, out) -> None:  # noqa: ANN001 - a spawned child's queue
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from engines.ddp.rank import _stamped_allreduce

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        reference = [p.detach().clone() for p in model.parameters()]
        stamps: list = []
        ddp = DistributedDataParallel(model)
        ddp.register_comm_hook(None, _stamped_allreduce(stamps))
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(100 + rank))
        ddp(x).pow(2).sum().backward()
        # what the mean gradient must be: each rank's own, from a plain copy of the model, averaged
        plain = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        with torch.no_grad():
            for p, r in zip(plain.parameters(), reference, strict=True):
                p.copy_(r)
        plain(x).pow(2).sum().backward()
        expected = []
        for p in plain.parameters():
            grad = p.grad.clone()
            dist.all_reduce(grad)
            expected.append(grad / world)
        close = all(torch.allclose(p.grad, e, atol=1e-6) for p, e in zip(model.parameters(), expected, strict=True))
        out.put((rank, close, [(index, nbytes, launched <= done) for index, nbytes, launched, done in stamps]))
    finally:
        dist.destroy_process_group()


def test_the_stamped_hook_leaves_each_rank_the_mean_gradient_and_stamps_every_bucket(tmp_path):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    init = f"file://{tmp_path / 'rendezvous'}"
    procs = [ctx.Process(target=_rank, args=(r, 2, init, out)) for r in range(2)]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    for _rank_id, close, stamps in results:
        assert close, "DDP's gradients with the stamped hook are not the ranks' mean"
        assert stamps and all(ok for *_, ok in stamps)
        assert sum(nbytes for _, nbytes, _ in stamps) == (8 * 16 + 16 + 16 * 3 + 3) * 4
