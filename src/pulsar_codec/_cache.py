"""One bounded, thread-safe LRU cache for the whole package."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A least-recently-used mapping of at most ``size`` entries, safe to share between threads.

    ``size`` 0 keeps nothing (every :meth:`get_or_make` makes the value again).
    """

    def __init__(self, size: int) -> None:
        self.size = max(int(size), 0)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value of ``key`` (now the most recent), or None."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` for ``key`` unless another thread kept one first; returns the kept value."""
        if self.size == 0:
            return value
        with self._lock:
            value = self._data.setdefault(key, value)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
            return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value of ``key``; when missing, ``make()`` runs outside the lock and is kept
        (if two threads race, both get the value kept first)."""
        found = self.get(key)
        if found is not None:
            return found
        return self.put(key, make())

    def drop(self, predicate: Callable[[K], bool]) -> None:
        """Forget every entry whose key matches ``predicate``."""
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                del self._data[key]

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
