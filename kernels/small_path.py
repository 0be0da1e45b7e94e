"""A compiled interpreter of seminaive rounds for tiny deltas (CPU, Numba).

When the deltas of a recursive stratum hold a handful of facts, the array path pays tens
of array calls and Python planning per rule and per round, whatever the size of the
delta.  This kernel runs whole rounds inside one compiled call instead, nested-loop join
by nested-loop join, so a round costs what its rule instances cost.

It knows nothing about rules: ``gpu_engine.small_rounds`` encodes every delta variant of
a stratum's recursive rules as rows of small int64 tables (layouts below) and hands over
the relations as arrays: sorted join indexes of the immutable runs (the relation versions
at entry and the lower strata), and a growing table N of the facts derived since entry,
tagged with the round that made them visible and indexed by hash tables on the key
columns the plans probe.  With the round t being evaluated, the versions of a stratum
relation are ``base ∪ N[tag < t]`` (``I \\ Δ``), ``base ∪ N[tag ≤ t]`` (``I``) and
``N[tag = t]`` (Δ), exactly the versions of the exact delta variants.

A variant may carry a multiplicity (``V_MULT``): the instances of the parts of its body
that it does not enumerate, counted once by :func:`count_instances`; each head row stands
for that many derivations.

A round appends its head rows to an output buffer; only when the round is complete are
they deduplicated against the base runs and N and inserted with tag ``t + 1`` (derivation
counts added per fact when counting).  A round whose outputs overflow the buffer, or that
would overflow N, returns before inserting anything, so the caller can grow N or evaluate
that round on the array path: the state is always that of a round boundary.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit, types
    from numba.extending import intrinsic

    from .numba_cache import CACHE  # False when no cache location is writable

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency
    AVAILABLE = False

MAXK = 8  # most columns of an atom, a key or a head
MAXV = 64  # most variables of a rule
STACK = 32  # expression evaluation stack

# --- index entries (IX): one sorted join index of one immutable run -------------------
IX_KEYS, IX_ROWS, IX_DENSE, IX_K, IX_COL0, IX_N, IX_DLEN = 0, 1, 2, 3, 4, 5, 6
IX_OFF = 7
IX_W = IX_OFF + MAXK  # width 64: the key is the value itself (one column, no packing)
IX_SH = IX_W + MAXK
IX_WIDTH = IX_SH + MAXK

# --- levels (L): one positive atom of a plan -------------------------------------------
# kind 0: scan Δ of a stratum relation; 1: probe a stratum relation (base runs + N);
# 2: probe a relation of a lower stratum (base runs only)
L_KIND, L_REL, L_VER, L_NKEY, L_HASH, L_IX0, L_NIX, L_F0, L_NF = 0, 1, 2, 3, 4, 5, 6, 7, 8
L_NBIND, L_NCONST, L_NEQ = 9, 10, 11
L_KEYREG = 12
L_KEYPOS = L_KEYREG + MAXK
L_BINDPOS = L_KEYPOS + MAXK
L_BINDREG = L_BINDPOS + MAXK
L_CONSTPOS = L_BINDREG + MAXK
L_CONSTVAL = L_CONSTPOS + MAXK
L_EQA = L_CONSTVAL + MAXK
L_EQB = L_EQA + MAXK
L_WIDTH = L_EQB + MAXK

# --- filters (F): applied once their variables are bound -------------------------------
# kind 0: compare code[L0:L1] op code[R0:R1]; 1: reg := code[L0:L1]; 2: negated atom
F_KIND, F_OP, F_L0, F_L1, F_R0, F_R1, F_REG, F_IX0, F_NIX, F_NKEY = range(10)
F_KEYREG = 10
F_WIDTH = F_KEYREG + MAXK
OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE = range(6)

# --- variants (V): one delta variant of one rule ---------------------------------------
V_RULE, V_NLEV, V_L0, V_HREL, V_HN, V_DREL, V_F0, V_NF, V_MULT = range(9)
# V_MULT: instances of the rule's independent parts per instance of the levels (each
# head row stands for that many derivations; 0: the variant derives nothing)
V_HC = 9  # head argument i: code[V_HC+2i : V_HC+2i+1]
V_WIDTH = V_HC + 2 * MAXK

# --- hash index definitions (HD) over N ------------------------------------------------
HD_REL, HD_NKEY = 0, 1
HD_KEYPOS = 2
HD_WIDTH = HD_KEYPOS + MAXK

# --- expression code: pairs (op, argument) ---------------------------------------------
C_VAR, C_CONST, C_ADD, C_SUB, C_MUL, C_DIV, C_MOD, C_NEG, C_MIN, C_MAX = range(1, 11)
# argument of arithmetic ops: 0 wraps to int32 (number), 1 to uint32 (unsigned)

# --- state scalars (ST) ------------------------------------------------------------------
ST_COUNT, ST_ROUND, ST_DLO, ST_DHI, ST_NOUT = 0, 1, 2, 3, 4
ST_WIDTH = 5

# statuses
DONE, BIG_DELTA, OVERFLOW, FULL, ROUND_LIMIT = 0, 1, 2, 3, 4

if AVAILABLE:

    @intrinsic
    def _ptr(typingctx, addr):
        """The int64 array at address ``addr`` (arrays are passed as a table of data
        addresses, kept alive by the caller: indexing a typed list costs ~30 ns a time)."""
        sig = types.CPointer(types.int64)(types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    @njit(cache=CACHE, nogil=True, inline='always')
    def _wrap(v, t):
        if t == 0:
            return ((v + 2147483648) & 4294967295) - 2147483648
        return v & 4294967295

    @njit(cache=CACHE, nogil=True, inline='always')
    def _eval(code, lo, hi, regs, stack):
        """Evaluate code[lo:hi] over the registers: (value, valid)."""
        sp = 0
        valid = True
        i = lo
        while i < hi:
            op = code[i]
            arg = code[i + 1]
            i += 2
            if op == C_VAR:
                stack[sp] = regs[arg]
                sp += 1
            elif op == C_CONST:
                stack[sp] = arg
                sp += 1
            elif op == C_NEG:
                stack[sp - 1] = _wrap(-stack[sp - 1], arg)
            else:
                b = stack[sp - 1]
                a = stack[sp - 2]
                sp -= 1
                if op == C_ADD:
                    r = _wrap(a + b, arg)
                elif op == C_SUB:
                    r = _wrap(a - b, arg)
                elif op == C_MUL:
                    r = _wrap(a * b, arg)
                elif op == C_DIV or op == C_MOD:
                    if b == 0:
                        valid = False
                        r = 0
                    else:
                        q = abs(a) // abs(b)
                        if (a < 0) != (b < 0):
                            q = -q
                        r = _wrap(q, arg) if op == C_DIV else _wrap(a - q * b, arg)
                elif op == C_MIN:
                    r = a if a < b else b
                else:
                    r = a if a > b else b
                stack[sp - 1] = r
        return stack[0], valid

    @njit(cache=CACHE, nogil=True, inline='always')
    def _pack(IX, e, vals, k):
        """The probe key of ``vals[:k]`` in index entry ``e``'s layout (-1: no match)."""
        if IX[e, IX_W] == 64:
            return vals[0], True
        key = 0
        for i in range(k):
            d = vals[i] - IX[e, IX_OFF + i]
            w = IX[e, IX_W + i]
            if d < 0 or d >= (1 << w):
                return -1, False
            key |= d << IX[e, IX_SH + i]
        return key, True

    @njit(cache=CACHE, nogil=True, inline='always')
    def _lower_between(keys, lo, hi, key):
        """First position in ``[lo, hi)`` of sorted ``keys`` with a key >= ``key``."""
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @njit(cache=CACHE, nogil=True, inline='always')
    def _lower(keys, n, key):
        return _lower_between(keys, 0, n, key)

    @njit(cache=CACHE, nogil=True, inline='always')
    def _range(A, IX, e, vals, k):
        """Positions [lo, hi) of index entry ``e`` whose key equals ``vals[:k]``."""
        n = IX[e, IX_N]
        if k == 0 or IX[e, IX_KEYS] < 0:
            return 0, n
        key, ok = _pack(IX, e, vals, k)
        if not ok:
            return 0, 0
        d = IX[e, IX_DENSE]
        if d >= 0:
            off = _ptr(A[d])
            if key < 0 or key >= IX[e, IX_DLEN] - 1:
                return 0, 0
            return off[key], off[key + 1]
        keys = _ptr(A[IX[e, IX_KEYS]])
        lo = _lower(keys, n, key)
        hi = lo
        while hi < n and keys[hi] == key:
            hi += 1
        return lo, hi

    @njit(cache=CACHE, nogil=True, inline='always')
    def _hash(vals, k):
        h = np.uint64(1469598103934665603)
        for i in range(k):
            h = (h ^ np.uint64(vals[i] & 0x7FFFFFFFFFFFFFFF)) * np.uint64(1099511628211)
            h ^= h >> np.uint64(29)
        return h

    @njit(cache=CACHE, nogil=True)
    def hash_insert(HD, hhead, hnext, nvals, h, row):
        """Add N row ``row`` to hash index ``h``."""
        k = HD[h, HD_NKEY]
        vals = np.empty(MAXK, dtype=np.int64)
        for i in range(k):
            vals[i] = nvals[row, HD[h, HD_KEYPOS + i]]
        slot = np.int64(_hash(vals, k) & np.uint64(hhead.shape[1] - 1))
        hnext[h, row] = hhead[h, slot]
        hhead[h, slot] = row

    @njit(cache=CACHE, nogil=True)
    def rebuild_hashes(HD, hhead, hnext, nvals, nrel, nnew, count, full_hash):
        """Insert rows [0, count) into the hash indexes of their relation (new facts into
        all of them, facts already in the base runs only into the full-row hash)."""
        for row in range(count):
            r = nrel[row]
            for h in range(HD.shape[0]):
                if HD[h, HD_REL] != r:
                    continue
                if nnew[row] == 1 or h == full_hash[r]:
                    hash_insert(HD, hhead, hnext, nvals, h, row)

    @njit(cache=CACHE, nogil=True, inline='always')
    def _in_base(A, IX, M, r, vals, k):
        for e in range(M[r, 0], M[r, 0] + M[r, 1]):
            lo, hi = _range(A, IX, e, vals, k)
            if hi > lo:
                return True
        return False

    @njit(cache=CACHE, nogil=True, inline='always')
    def _find(HD, hhead, hnext, nvals, h, vals, k):
        """An N row of hash ``h`` whose full row equals ``vals`` (-1: none)."""
        slot = np.int64(_hash(vals, k) & np.uint64(hhead.shape[1] - 1))
        row = hhead[h, slot]
        while row >= 0:
            same = True
            for i in range(k):
                if nvals[row, i] != vals[i]:
                    same = False
                    break
            if same:
                return row
            row = hnext[h, row]
        return -1

    @njit(cache=CACHE, nogil=True)
    def _filters(A, IX, F, code, f0, nf, regs, stack, keybuf):
        for f in range(f0, f0 + nf):
            kind = F[f, F_KIND]
            if kind == 0:
                a, oka = _eval(code, F[f, F_L0], F[f, F_L1], regs, stack)
                b, okb = _eval(code, F[f, F_R0], F[f, F_R1], regs, stack)
                if not (oka and okb):
                    return False
                op = F[f, F_OP]
                if op == OP_EQ:
                    ok = a == b
                elif op == OP_NE:
                    ok = a != b
                elif op == OP_LT:
                    ok = a < b
                elif op == OP_LE:
                    ok = a <= b
                elif op == OP_GT:
                    ok = a > b
                else:
                    ok = a >= b
                if not ok:
                    return False
            elif kind == 1:
                v, ok = _eval(code, F[f, F_L0], F[f, F_L1], regs, stack)
                if not ok:
                    return False
                regs[F[f, F_REG]] = v
            else:
                k = F[f, F_NKEY]
                for i in range(k):
                    keybuf[i] = regs[F[f, F_KEYREG + i]]
                for e in range(F[f, F_IX0], F[f, F_IX0] + F[f, F_NIX]):
                    lo, hi = _range(A, IX, e, keybuf, k)
                    if hi > lo:
                        return False
        return True

    @njit(cache=CACHE, nogil=True, inline='always')
    def _n_row_ok(L, lv, nvals, row, regs):
        """Constants, repeated variables and bound keys of an atom on an N row."""
        for i in range(L[lv, L_NCONST]):
            if nvals[row, L[lv, L_CONSTPOS + i]] != L[lv, L_CONSTVAL + i]:
                return False
        for i in range(L[lv, L_NEQ]):
            if nvals[row, L[lv, L_EQA + i]] != nvals[row, L[lv, L_EQB + i]]:
                return False
        for i in range(L[lv, L_NKEY]):
            if nvals[row, L[lv, L_KEYPOS + i]] != regs[L[lv, L_KEYREG + i]]:
                return False
        return True

    @njit(cache=CACHE, nogil=True)
    def _variant(A, IX, L, F, V, code, HD, hhead, hnext, nvals, nrel, ntag, nnew, st,
                 ovals, orel, omul, v, t, count_only):
        """All instances of variant ``v`` in round ``t``, appended to the output buffer
        (each row with the variant's multiplicity ``V_MULT``); returns the number of
        derivations, or -1 when the buffer overflowed.  With ``count_only`` nothing is
        appended: the instances are counted (an independent part, :func:`count_instances`)."""
        nlev = V[v, V_NLEV]
        l0 = V[v, V_L0]
        regs = np.zeros(MAXV, dtype=np.int64)
        stack = np.empty(STACK, dtype=np.int64)
        keybuf = np.empty(MAXK, dtype=np.int64)
        if not _filters(A, IX, F, code, V[v, V_F0], V[v, V_NF], regs, stack, keybuf):
            return 0
        # iterator state per level: phase 0 base entries, 1 N chain (or Δ range), 2 done
        phase = np.zeros(nlev, dtype=np.int64)
        ent = np.zeros(nlev, dtype=np.int64)
        pos = np.zeros(nlev, dtype=np.int64)
        end = np.zeros(nlev, dtype=np.int64)
        keys = np.zeros((nlev, MAXK), dtype=np.int64)
        ocap = ovals.shape[0]
        hrel = V[v, V_HREL]
        hn = V[v, V_HN]
        mult = V[v, V_MULT]
        made = 0
        lv = 0
        fresh = True
        while lv >= 0:
            li = l0 + lv
            kind = L[li, L_KIND]
            if fresh:  # position the iterator of level lv
                fresh = False
                for i in range(L[li, L_NKEY]):
                    keys[lv, i] = regs[L[li, L_KEYREG + i]]
                if kind == 0:
                    phase[lv] = 1
                    pos[lv] = st[ST_DLO]
                    end[lv] = st[ST_DHI]
                else:
                    phase[lv] = 0
                    ent[lv] = L[li, L_IX0] - 1
                    pos[lv] = 0
                    end[lv] = 0
            # next match of level lv
            found = False
            row = -1
            base_run = -1
            while True:
                if phase[lv] == 0:
                    if pos[lv] < end[lv]:
                        e = ent[lv]
                        p = pos[lv]
                        pos[lv] += 1
                        rid = IX[e, IX_ROWS]
                        row = _ptr(A[rid])[p] if rid >= 0 else p
                        base_run = e
                        found = True
                        break
                    ent[lv] += 1
                    if ent[lv] >= L[li, L_IX0] + L[li, L_NIX]:
                        if kind == 1:
                            phase[lv] = 1
                            h = L[li, L_HASH]
                            slot = np.int64(_hash(keys[lv], L[li, L_NKEY])
                                            & np.uint64(hhead.shape[1] - 1))
                            pos[lv] = hhead[h, slot]
                        else:
                            phase[lv] = 2
                        continue
                    lo, hi = _range(A, IX, ent[lv], keys[lv], L[li, L_NKEY])
                    pos[lv] = lo
                    end[lv] = hi
                elif phase[lv] == 1:
                    if kind == 0:
                        if pos[lv] >= end[lv]:
                            phase[lv] = 2
                            continue
                        r = pos[lv]
                        pos[lv] += 1
                        if nrel[r] != L[li, L_REL] or nnew[r] != 1:
                            continue
                        if not _n_row_ok(L, li, nvals, r, regs):
                            continue
                        row = r
                        found = True
                        break
                    r = pos[lv]
                    if r < 0:
                        phase[lv] = 2
                        continue
                    pos[lv] = hnext[L[li, L_HASH], r]
                    if nnew[r] != 1:
                        continue
                    tg = ntag[r]
                    if tg > t or (tg == t and L[li, L_VER] == 0):
                        continue
                    if not _n_row_ok(L, li, nvals, r, regs):
                        continue
                    row = r
                    found = True
                    break
                else:
                    break
            if not found:
                lv -= 1
                continue
            # bind the new variables
            if base_run >= 0:
                c0 = IX[base_run, IX_COL0]
                for i in range(L[li, L_NBIND]):
                    regs[L[li, L_BINDREG + i]] = _ptr(A[c0 + L[li, L_BINDPOS + i]])[row]
            else:
                for i in range(L[li, L_NBIND]):
                    regs[L[li, L_BINDREG + i]] = nvals[row, L[li, L_BINDPOS + i]]
            if L[li, L_NF] and not _filters(A, IX, F, code, L[li, L_F0], L[li, L_NF], regs,
                                            stack, keybuf):
                continue
            if lv + 1 < nlev:
                lv += 1
                fresh = True
                continue
            # emit the head
            if count_only:
                made += 1
                continue
            k = st[ST_NOUT]
            if k >= ocap:
                return -1
            ok = True
            for i in range(hn):
                val, vok = _eval(code, V[v, V_HC + 2 * i], V[v, V_HC + 2 * i + 1], regs,
                                 stack)
                if not vok:
                    ok = False
                    break
                ovals[k, i] = val
            if ok:
                orel[k] = hrel
                omul[k] = mult
                st[ST_NOUT] = k + 1
                made += mult
        return made

    @njit(cache=CACHE, nogil=True)
    def count_instances(A, IX, L, F, VC, code, v):
        """The instances of the levels of ``VC[v]`` (atoms of lower strata only): how
        many derivations each instance of a variant's other atoms stands for."""
        z2 = np.zeros((1, 1), dtype=np.int64)
        z1 = np.zeros(1, dtype=np.int64)
        st = np.zeros(ST_WIDTH, dtype=np.int64)
        return _variant(A, IX, L, F, VC, code, z2, z2, z2, z2, z1, z1, z1, st, z2, z1, z1,
                        v, np.int64(0), np.int64(1))

    @njit(cache=CACHE, nogil=True)
    def run_rounds(A, IX, L, F, V, code, HD, hhead, hnext, M, full_hash, nvals, nrel,
                   ntag, nnew, ncnt, st, ovals, orel, omul, rder, reval, counting,
                   delta_max, max_rounds):
        """Seminaive rounds from round ``st[ST_ROUND]`` until a status (module doc)."""
        nrules = rder.shape[0]
        nrels = M.shape[0]
        tally = np.zeros(nrules, dtype=np.int64)
        evals = np.zeros(nrules, dtype=np.int64)
        dcount = np.zeros(nrels, dtype=np.int64)
        vals = np.empty(MAXK, dtype=np.int64)
        ncap = nvals.shape[0]
        rounds = 0
        while True:
            t = st[ST_ROUND]
            dlo = st[ST_DLO]
            dhi = st[ST_DHI]
            dcount[:] = 0
            for r in range(dlo, dhi):
                if nnew[r] == 1:
                    dcount[nrel[r]] += 1
            if dcount.sum() == 0:
                return DONE
            tally[:] = 0
            evals[:] = 0
            st[ST_NOUT] = 0
            for v in range(V.shape[0]):
                if dcount[V[v, V_DREL]] == 0:
                    continue
                evals[V[v, V_RULE]] += 1
                if V[v, V_MULT] == 0:  # an independent part without instances
                    continue
                made = _variant(A, IX, L, F, V, code, HD, hhead, hnext, nvals, nrel, ntag,
                                nnew, st, ovals, orel, omul, v, t, np.int64(0))
                if made < 0:
                    return OVERFLOW
                tally[V[v, V_RULE]] += made
            nout = st[ST_NOUT]
            if st[ST_COUNT] + nout > ncap:
                return FULL
            start = st[ST_COUNT]
            count = start
            new = 0
            for i in range(nout):
                r = orel[i]
                k = 0
                for c in range(nvals.shape[1]):
                    vals[c] = ovals[i, c]
                fh = full_hash[r]
                k = HD[fh, HD_NKEY]
                j = _find(HD, hhead, hnext, nvals, fh, vals, k)
                if j >= 0:
                    ncnt[j] += counting * omul[i]
                    continue
                in_base = _in_base(A, IX, M, r, vals, k)
                if in_base and counting == 0:
                    continue
                for c in range(k):
                    nvals[count, c] = vals[c]
                nrel[count] = r
                ntag[count] = t + 1
                ncnt[count] = counting * omul[i]
                if in_base:
                    nnew[count] = 0
                    hash_insert(HD, hhead, hnext, nvals, fh, count)
                else:
                    nnew[count] = 1
                    new += 1
                    for h in range(HD.shape[0]):
                        if HD[h, HD_REL] == r:
                            hash_insert(HD, hhead, hnext, nvals, h, count)
                count += 1
            st[ST_COUNT] = count
            rder += tally
            reval += evals
            st[ST_ROUND] = t + 1
            st[ST_DLO] = start
            st[ST_DHI] = count
            rounds += 1
            if new == 0:
                return DONE
            if new > delta_max:
                return BIG_DELTA
            if rounds >= max_rounds:
                return ROUND_LIMIT
