"""KaHIP's kaffpa partitioner, in its six preconfigurations."""

from __future__ import annotations

import numpy as np

from ..errors import BackendError

__all__ = ["kahip", "KAHIP_MODES"]

KAHIP_MODES = ("fast", "eco", "strong", "fastsocial", "ecosocial", "strongsocial")


def kahip(indptr: np.ndarray, indices: np.ndarray, k: int, *, seed: int, imbalance: float,
          mode: str) -> np.ndarray:
    """Labels from ``kahip.kaffpa`` with the named preconfiguration (``fast``, ``eco``, ...)."""
    try:
        import kahip as _kahip
    except ImportError as exc:  # pragma: no cover - kahip is a dependency
        raise BackendError("partitioners 'kahip-*' need kahip: pip install kahip") from exc
    modes = {name: getattr(_kahip, name.upper()) for name in KAHIP_MODES}
    if mode not in modes:
        raise ValueError(f"kahip mode: {mode!r} is not one of {', '.join(KAHIP_MODES)}")
    n = indptr.size - 1
    vwgt = np.ones(n, dtype=np.int64).tolist()
    adjcwgt = np.ones(indices.size, dtype=np.int64).tolist()
    _, labels = _kahip.kaffpa(vwgt, indptr.tolist(), adjcwgt, indices.tolist(), int(k),
                              float(imbalance), True, int(seed), modes[mode])
    return np.asarray(labels, dtype=np.int32)
