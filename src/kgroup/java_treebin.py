"""A ``java.util.HashMap`` bucket that became a tree (``HashMap.TreeNode``), for its iteration order.

A chain of 9 in a table of 64+ buckets is turned into a red-black tree (``treeifyBin``). The map still
iterates a tree bucket through its nodes' ``next`` links, but a tree keeps them in an order of its own:
``treeify`` and every insert or removal move the tree's root to the front (``moveRootToFront``), and
``putTreeVal`` links a new node right after its tree parent, not at the chain's tail. A resize splits a
tree bucket in ``next`` order; a half of 6 or fewer becomes a plain chain again (``untreeify``), a
bigger half is treeified anew when the other half is not empty. A removal that finds the tree too small
(``root.right``, ``root.left`` or ``root.left.left`` missing) untreeifies it.

This is JDK 17's ``HashMap.TreeNode`` step by step (the same since JDK 8), for keys whose spread hashes
differ (``Integer`` partitions always do); keys of equal hash within one tree are ordered here by the
order they came in (Java would compare them or break the tie by identity hash): :attr:`TreeBin.exact`
says whether that happened.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["UNTREEIFY_THRESHOLD", "TreeBin"]

UNTREEIFY_THRESHOLD = 6

_K = TypeVar("_K", bound=Hashable)


class _Node:
    __slots__ = ("hash", "key", "left", "next", "parent", "prev", "red", "right")

    def __init__(self, key: Any, hash_: int) -> None:
        self.key = key
        self.hash = hash_
        self.parent: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None
        self.red = False


# The tree's rebalancing is written once for a side and run for both: Java's mirrored branches (the
# ``left`` one and the ``right`` one of each case) are the same steps with the two sides swapped.
_OTHER_SIDE = {"left": "right", "right": "left"}


def _side_of(parent: _Node, child: _Node | None) -> str:
    """The side of ``parent`` that ``child`` hangs on (``right`` unless it is the left child)."""
    return "left" if parent.left is child else "right"


def _rotate(root: _Node, p: _Node, toward: str) -> _Node:
    """``rotateLeft`` (``toward="left"``) or ``rotateRight``: ``p``'s child on the other side takes its
    place and takes ``p`` as its child on ``toward``'s side; returns the root."""
    away = _OTHER_SIDE[toward]
    c: _Node | None = getattr(p, away)
    if c is not None:
        inner: _Node | None = getattr(c, toward)
        setattr(p, away, inner)
        if inner is not None:
            inner.parent = p
        pp = c.parent = p.parent
        if pp is None:
            root = c
            c.red = False
        else:
            setattr(pp, _side_of(pp, p), c)
        setattr(c, toward, p)
        p.parent = c
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        side = _side_of(xpp, xp)
        other = _OTHER_SIDE[side]
        uncle: _Node | None = getattr(xpp, other)
        if uncle is not None and uncle.red:
            uncle.red = False
            xp.red = False
            xpp.red = True
            x = xpp
        else:
            if x is getattr(xp, other):
                x = xp
                root = _rotate(root, x, side)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate(root, xpp, other)


def _red(node: _Node | None) -> bool:
    return node is not None and node.red


def _balance_deletion(root: _Node, x: _Node | None) -> _Node:
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        side = _side_of(xp, x)
        other = _OTHER_SIDE[side]
        sibling: _Node | None = getattr(xp, other)
        if sibling is not None and sibling.red:
            sibling.red = False
            xp.red = True
            root = _rotate(root, xp, side)
            xp = x.parent
            sibling = None if xp is None else getattr(xp, other)
        if sibling is None:
            x = xp
        else:
            near: _Node | None = getattr(sibling, side)
            far: _Node | None = getattr(sibling, other)
            if not _red(far) and not _red(near):
                sibling.red = True
                x = xp
            else:
                if not _red(far):
                    if near is not None:
                        near.red = False
                    sibling.red = True
                    root = _rotate(root, sibling, other)
                    xp = x.parent
                    sibling = None if xp is None else getattr(xp, other)
                if sibling is not None:
                    sibling.red = False if xp is None else xp.red
                    far = getattr(sibling, other)
                    if far is not None:
                        far.red = False
                if xp is not None:
                    xp.red = False
                    root = _rotate(root, xp, side)
                x = root


class TreeBin(Generic[_K]):
    """One tree bucket: its nodes in ``next`` order from :attr:`first` (``tab[index]``), and the tree."""

    __slots__ = ("exact", "first", "nodes")

    def __init__(self, chain: Iterable[tuple[_K, int]]) -> None:
        """``treeifyBin``'s conversion of a chain (keys and spread hashes in chain order), then
        ``treeify``."""
        self.nodes: dict[_K, _Node] = {}
        self.first: _Node | None = None
        #: False once two keys of equal hash shared the tree (their order is not Java's for sure)
        self.exact = True
        tail: _Node | None = None
        for key, hash_ in chain:
            node = self.nodes[key] = _Node(key, hash_)
            node.prev = tail
            if tail is None:
                self.first = node
            else:
                tail.next = node
            tail = node
        self._treeify()

    def __len__(self) -> int:
        return len(self.nodes)

    def keys(self) -> Iterator[_K]:
        """The bucket's keys in the order the map iterates them."""
        node = self.first
        while node is not None:
            yield node.key
            node = node.next

    def _direction(self, p: _Node, hash_: int) -> int:
        if p.hash > hash_:
            return -1
        if p.hash < hash_:
            return 1
        self.exact = False
        return 1  # after the keys of equal hash already there (not Java's rule: see the module)

    def _leaf_slot(self, root: _Node, hash_: int) -> tuple[_Node, str]:
        """Where a node of ``hash_`` is linked in: the node it hangs from and on which side (the walk
        down from the root that ``treeify`` and ``putTreeVal`` share)."""
        p = root
        while True:
            side = "left" if self._direction(p, hash_) <= 0 else "right"
            child: _Node | None = getattr(p, side)
            if child is None:
                return p, side
            p = child

    def _root(self) -> _Node:
        node = self.first
        assert node is not None
        while node.parent is not None:
            node = node.parent
        return node

    def _treeify(self) -> None:
        root: _Node | None = None
        x = self.first
        while x is not None:
            following = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                xp, side = self._leaf_slot(root, x.hash)
                x.parent = xp
                setattr(xp, side, x)
                root = _balance_insertion(root, x)
            x = following
        if root is not None:
            self._move_root_to_front(root)

    def _move_root_to_front(self, root: _Node) -> None:
        first = self.first
        if root is not first:
            self.first = root
            rp = root.prev
            rn = root.next
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            if first is not None:
                first.prev = root
            root.next = first
            root.prev = None

    def put(self, key: _K, hash_: int) -> None:
        """``putTreeVal`` of a key not in the tree."""
        root = self._root()
        xp, side = self._leaf_slot(root, hash_)
        xpn = xp.next
        x = self.nodes[key] = _Node(key, hash_)
        x.next = xpn
        setattr(xp, side, x)
        xp.next = x
        x.parent = x.prev = xp
        if xpn is not None:
            xpn.prev = x
        self._move_root_to_front(_balance_insertion(root, x))

    def remove(self, key: _K) -> bool:
        """``removeTreeNode(movable=true)`` of a key in the tree; True when the bucket is left a plain
        chain (too small a tree: :meth:`keys` then gives its order)."""
        p = self.nodes.pop(key)
        succ, pred = p.next, p.prev
        if pred is None:
            self.first = succ
        else:
            pred.next = succ
        if succ is not None:
            succ.prev = pred
        if self.first is None:
            return True
        root = p
        while root.parent is not None:
            root = root.parent
        if root.right is None or root.left is None or root.left.left is None:
            return True  # untreeify: the chain as linked
        pl, pr = p.left, p.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        self._move_root_to_front(r)
        return False
