"""Tests for contextwm.adapters.faiss_index against a numpy brute force, its exact reference.

Every behavioural test body runs against both backends; the brute force is short enough to
be obviously right, so agreement on random data is evidence that FAISS is used correctly.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt
import pytest
from contextwm.adapters.faiss_index import FaissIndex, FaissIndexFiles
from hypothesis import given, settings
from hypothesis import strategies as st

DIM = 16


class BruteForceIndex:
    """The exact reference: a dict of id -> vector, scored with a matrix product."""

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._vectors: dict[int, npt.NDArray[np.float32]] = {}

    @property
    def size(self) -> int:
        return len(self._vectors)

    def add(self, ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        for i, v in zip(ids, vectors, strict=True):
            self._vectors[int(i)] = np.asarray(v, dtype=np.float32)

    def remove(self, ids: Sequence[int]) -> int:
        return sum(self._vectors.pop(int(i), None) is not None for i in set(ids))

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        keep = set(self._vectors) if allowed is None else set(self._vectors) & set(allowed.tolist())
        ids = np.array(sorted(keep), dtype=np.int64)
        if k <= 0 or len(ids) == 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        scores = np.stack([self._vectors[int(i)] for i in ids]) @ query
        top = np.argsort(-scores, kind="stable")[:k]
        return scores[top].astype(np.float32), ids[top]

    def ids(self) -> npt.NDArray[np.int64]:
        return np.array(sorted(self._vectors), dtype=np.int64)


@pytest.fixture(autouse=True, scope="module")
def one_omp_thread() -> Iterator[None]:
    """Single queries with OpenMP threads cost ~15 ms each on a busy 2-core machine (spin
    waits) against ~0.02 ms on one thread; results are the same either way."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


Backend = Callable[[int], FaissIndex | BruteForceIndex]
BACKENDS: dict[str, Backend] = {"faiss": FaissIndex, "numpy": BruteForceIndex}


@pytest.fixture(params=sorted(BACKENDS))
def make_index(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def truth(
    vectors: dict[int, npt.NDArray[np.float32]],
    query: npt.NDArray[np.float32],
    allowed: set[int] | None = None,
) -> dict[int, float]:
    """Every eligible id's exact score, in float64."""
    return {
        i: float(np.dot(v.astype(np.float64), query.astype(np.float64)))
        for i, v in vectors.items()
        if allowed is None or i in allowed
    }


def check_top_k(
    got: tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]],
    exact: dict[int, float],
    k: int,
) -> None:
    """got is a correct top-k of exact: right length, right scores, best first, and no
    missing id scores higher than the last returned (ties may come back in any order)."""
    scores, ids = got
    assert len(scores) == len(ids) == min(k, len(exact))
    assert len(set(ids.tolist())) == len(ids)
    for s, i in zip(scores.tolist(), ids.tolist(), strict=True):
        assert int(i) in exact
        assert s == pytest.approx(exact[int(i)], abs=1e-5)
    assert all(a >= b - 1e-6 for a, b in pairwise(scores))
    if len(ids):
        worst = float(scores[-1])
        returned = set(ids.tolist())
        rest = [s for i, s in exact.items() if i not in returned]
        assert all(s <= worst + 1e-5 for s in rest)
    expected_top = sorted(exact.values(), reverse=True)[: len(ids)]
    np.testing.assert_allclose(scores, expected_top, atol=1e-5)


# ---------------------------------------------------------------- same body, two backends


def test_top_k_on_random_unit_vectors(make_index: Backend) -> None:
    rng = np.random.default_rng(1)
    vecs = unit(rng, 300)
    ids = rng.permutation(10_000)[:300].tolist()
    index = make_index(DIM)
    index.add(ids, vecs)
    assert index.size == 300
    stored = dict(zip(ids, vecs, strict=True))
    for q in unit(rng, 20):
        for k in (1, 5, 50, 300, 1000):
            check_top_k(index.search(q, k), truth(stored, q), k)


def test_allowed_selector(make_index: Backend) -> None:
    rng = np.random.default_rng(2)
    vecs = unit(rng, 200)
    index = make_index(DIM)
    index.add(list(range(1, 201)), vecs)
    stored = dict(zip(range(1, 201), vecs, strict=True))
    allowed = np.array([3, 17, 18, 150, 199, 5000], dtype=np.int64)  # 5000 is not in the index
    for q in unit(rng, 10):
        check_top_k(index.search(q, 3, allowed), truth(stored, q, set(allowed.tolist())), 3)
        check_top_k(index.search(q, 10, allowed), truth(stored, q, set(allowed.tolist())), 10)
    scores, found = index.search(unit(rng, 1)[0], 5, np.zeros(0, dtype=np.int64))
    assert len(scores) == len(found) == 0


def test_removals(make_index: Backend) -> None:
    rng = np.random.default_rng(3)
    vecs = unit(rng, 100)
    index = make_index(DIM)
    index.add(list(range(100)), vecs)
    stored = dict(zip(range(100), vecs, strict=True))
    gone = list(range(0, 100, 3))
    # Ids it does not hold are ignored: the count is of the entries that went.
    assert index.remove([*gone, 500]) == len(gone)
    assert index.remove([]) == 0
    assert index.remove(gone) == 0
    for i in gone:
        del stored[i]
    assert index.size == len(stored)
    assert sorted(index.ids().tolist()) == sorted(stored)
    for q in unit(rng, 10):
        check_top_k(index.search(q, 20), truth(stored, q), 20)
    # Re-adding a removed id works.
    index.add([0], vecs[:1])
    stored[0] = vecs[0]
    check_top_k(index.search(vecs[0], 1), truth(stored, vecs[0]), 1)
    assert int(index.search(vecs[0], 1)[1][0]) == 0


def test_empty_index_and_nonpositive_k(make_index: Backend) -> None:
    index = make_index(DIM)
    q = unit(np.random.default_rng(4), 1)[0]
    assert len(index.search(q, 5)[1]) == 0
    index.add([], np.zeros((0, DIM), dtype=np.float32))
    assert index.size == 0
    index.add([7], q[None])
    assert len(index.search(q, 0)[1]) == 0
    assert index.search(q, 3)[1].tolist() == [7]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.lists(
        st.tuples(st.sampled_from(["add", "remove", "search"]), st.integers(1, 40)),
        min_size=1,
        max_size=25,
    ),
)
def test_faiss_agrees_with_brute_force_over_random_operations(
    seed: int, ops: list[tuple[str, int]]
) -> None:
    rng = np.random.default_rng(seed)
    faiss_index, reference = FaissIndex(DIM), BruteForceIndex(DIM)
    next_id = 0
    for op, n in ops:
        if op == "add":
            ids = list(range(next_id, next_id + n))
            next_id += n
            vecs = unit(rng, n)
            faiss_index.add(ids, vecs)
            reference.add(ids, vecs)
        elif op == "remove" and reference.size:
            victims = rng.choice(reference.ids(), size=min(n, reference.size), replace=False)
            faiss_index.remove(victims.tolist())
            reference.remove(victims.tolist())
        else:
            q = unit(rng, 1)[0]
            allowed = None
            if reference.size and rng.random() < 0.5:
                allowed = rng.choice(np.arange(next_id + 5), size=n, replace=True).astype(np.int64)
            got = faiss_index.search(q, n, allowed)
            # Every id the reference could return at all, with its score:
            eligible_scores, eligible_ids = reference.search(q, 10**6, allowed)
            exact = dict(zip(eligible_ids.tolist(), eligible_scores.tolist(), strict=True))
            check_top_k(got, exact, n)
        assert faiss_index.size == reference.size
        assert sorted(faiss_index.ids().tolist()) == reference.ids().tolist()


# ---------------------------------------------------------------- files


def test_save_load_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vecs = unit(rng, 50)
    files = FaissIndexFiles(tmp_path / "idx", DIM)
    index = files.new()
    index.add(list(range(100, 150)), vecs)
    index.remove([120, 121])
    files.save(7, index.snapshot())
    assert (tmp_path / "idx" / "7.faiss").exists()
    assert not list((tmp_path / "idx").glob("*.tmp"))  # written atomically via a temp file
    loaded = files.load(7)
    assert loaded is not None
    assert sorted(loaded.ids().tolist()) == sorted(index.ids().tolist())
    for q in unit(rng, 5):
        s1, i1 = index.search(q, 10)
        s2, i2 = loaded.search(q, 10)
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_allclose(s1, s2)
    assert files.load(8) is None
    files.delete(7)
    files.delete(7)  # deleting twice is fine
    assert files.load(7) is None


@pytest.mark.parametrize(
    "content", [b"", b"not a faiss index at all", b"IxMp" + b"\x00" * 3, b"\xff" * 4096]
)
def test_corrupt_file_loads_as_none(tmp_path: Path, content: bytes) -> None:
    files = FaissIndexFiles(tmp_path, DIM)
    (tmp_path / "3.faiss").write_bytes(content)
    assert files.load(3) is None


def test_truncated_file_loads_as_none(tmp_path: Path) -> None:
    files = FaissIndexFiles(tmp_path, DIM)
    index = files.new()
    index.add(list(range(20)), unit(np.random.default_rng(6), 20))
    files.save(1, index.snapshot())
    data = (tmp_path / "1.faiss").read_bytes()
    (tmp_path / "1.faiss").write_bytes(data[: len(data) // 2])
    assert files.load(1) is None


def test_garbled_vectors_load_as_none(tmp_path: Path) -> None:
    # FAISS itself reads such a file without complaint: the ids are intact, the vectors are
    # not. The checksum is what tells.
    files = FaissIndexFiles(tmp_path, DIM)
    index = files.new()
    index.add(list(range(200)), unit(np.random.default_rng(7), 200))
    files.save(2, index.snapshot())
    path = tmp_path / "2.faiss"
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = np.random.default_rng(8).bytes(64)
    path.write_bytes(bytes(data))
    assert faiss.read_index(str(path)).ntotal == 200
    assert files.load(2) is None
    with pytest.raises(ValueError, match="checksum mismatch"):
        FaissIndex.read(path)


def test_a_file_without_checksum_loads_as_none(tmp_path: Path) -> None:
    # Files saved before checksums existed: rebuilt once from the stored vectors.
    index = FaissIndex(DIM)
    index.add([1, 2], unit(np.random.default_rng(9), 2))
    (tmp_path / "5.faiss").write_bytes(index.snapshot())
    assert FaissIndexFiles(tmp_path, DIM).load(5) is None


def test_saving_recreates_a_deleted_directory(tmp_path: Path) -> None:
    files = FaissIndexFiles(tmp_path / "idx", DIM)
    (tmp_path / "idx").rmdir()
    files.save(1, files.new().snapshot())
    loaded = files.load(1)
    assert loaded is not None and loaded.size == 0


def test_sizes_are_the_saved_files_by_key(tmp_path: Path) -> None:
    files = FaissIndexFiles(tmp_path / "idx", DIM)
    assert files.sizes() == {}
    index = files.new()
    index.add([1, 2, 3], unit(np.random.default_rng(2), 3))
    files.save(7, index.snapshot())
    files.save(12, files.new().snapshot())
    # A save cut short leaves its temporary file; other files are not indexes.
    (tmp_path / "idx" / "9.faiss.tmp").write_bytes(b"partial")
    (tmp_path / "idx" / "notes.faiss").write_bytes(b"not ours")
    sizes = files.sizes()
    assert sizes == {k: (tmp_path / "idx" / f"{k}.faiss").stat().st_size for k in (7, 12)}
    assert sizes[7] > sizes[12] > 0
    files.delete(7)
    assert set(files.sizes()) == {12}
    shutil.rmtree(tmp_path / "idx")  # deleted while the server runs
    assert files.sizes() == {}


def test_wrong_dimension_loads_as_none(tmp_path: Path) -> None:
    FaissIndexFiles(tmp_path, DIM + 1).save(4, FaissIndex(DIM + 1).snapshot())
    assert FaissIndexFiles(tmp_path, DIM).load(4) is None
    with pytest.raises(ValueError, match="dimension"):
        FaissIndex.load(tmp_path / "4.faiss", DIM)
