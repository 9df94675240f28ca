// The static matcher's count over a candidate space (included by match.cu;
// kernels/space.go builds the arrays from incremental.Space).
//
// The CPU's static matcher searches a candidate space: per depth of the plan
// the query vertex's candidates, and per constraint, for each candidate of
// the constraint's earlier depth, the ascending list of candidate indexes of
// the depth it reaches. Those lists hold only candidates, so a level needs
// no label range, view, direction or candidate-set check, and on yeast they
// are several times shorter than the graph's lists. match_space walks the
// same space: a warp per seed (a prefix of candidate indexes), depth first;
// a level's candidates are the intersection of its constraints' lists, the
// shortest driving and the others binary-searched, less the data vertices
// already placed and those the symmetry conditions refuse. The last level is
// counted, never stored, and with a single constraint counted without
// reading its list (sp_count_one).
//
// STMatch's code motion, over the space: where an earlier depth's
// constraints are among this depth's (same placed vertex, edge label and
// direction) and its symmetry conditions follow from this depth's, that
// depth's buffer of candidates, made once for the walk below it, already
// meets those constraints. The level scans it when it is shorter than every
// list, checking only the other constraints (kernels/space.go, keptSource).
// A clique's levels scan one candidate list each, however deep. A launch with out_depth > 0 writes the prefixes of
// that depth as the next launch's seeds instead of walking on.
//
// Counting stops at the plan's independent tail as the CPU's search does
// (incremental/tail.go): from depth tail on, no level constrains or
// conditions another, so once the depths above it are placed, sp_tail makes
// each tail level's candidates and counts the ways to pick one per level,
// all distinct, group by group (a group: levels whose candidates may meet).

// A depth's words in sp_prog.
#define SP_VERTS 0 // offset of the depth's candidates (data vertex ids) in verts
#define SP_NCONS 1
#define SP_CONS 2  // index of the depth's first constraint in sp_cons
#define SP_BUF 3   // offset of the depth's candidate buffer in a warp's scratch
#define SP_ABOVE 4 // bit a: the vertex must be above depth a's
#define SP_BELOW 5 // bit b: the vertex must be below depth b's
#define SP_NVERTS 6
#define SP_SRC 7   // an earlier depth whose candidates this one may scan (see below), or SP_NONE
#define SP_COVER 8 // bit c: constraint c holds for every candidate of SP_SRC
#define SP_SAME 9  // 1: SP_SRC's candidates are this depth's, index for index
#define SP_GROUP 10 // a tail depth's group: depths of one label (sp_tail)
#define SP_STRIDE 11
#define SP_NONE 0xFFFFFFFFu
// A constraint's words in sp_cons.
#define SC_FROM 0
#define SC_OFF 1 // offset of its CSR offsets (one per candidate of SC_FROM, and one) in offs
#define SC_NBR 2 // offset of its lists in nbrs
#define SC_STRIDE 3
#define SP_MAXGROUP 6 // incremental.MaxGroup: kernels/space.go counts no tail with a larger group

// lower bound of y in a[lo, hi)
__device__ __forceinline__ uint32_t sp_search(const uint32_t* a, uint32_t lo, uint32_t hi, uint32_t y)
{
    while (lo < hi) {
        uint32_t m = (lo + hi) >> 1;
        if (a[m] < y)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

// sp_fits says whether data vertex v may stand at depth d below the placed
// vertices vid[0, d): no vertex twice, and v above (below) the placed
// vertices the depth's symmetry conditions name.
__device__ __forceinline__ bool sp_fits(const uint32_t* vid, uint32_t d, uint32_t above, uint32_t below, uint32_t v)
{
    for (uint32_t a = 0; a < d; a++) {
        uint32_t u = vid[a];
        if (u == v || (((above >> a) & 1) && v <= u) || (((below >> a) & 1) && v >= u))
            return false;
    }
    return true;
}

// sp_emit is called by the whole warp: the lanes whose ok is set append
// their y to buf after its first cnt entries (when buf is not null), in lane
// order; it returns how many did.
__device__ __forceinline__ uint32_t sp_emit(uint32_t* buf, uint32_t cnt, bool ok, uint32_t y, uint32_t lane)
{
    unsigned mask = __ballot_sync(0xFFFFFFFFu, ok);
    if (buf && ok)
        buf[cnt + __popc(mask & ((1u << lane) - 1))] = y;
    return __popc(mask);
}

// sp_level makes the candidates of depth d below the placed prefix idx/vid
// [0, placed) (placed is d but in a tail): it writes them to buf and returns
// their number, or, with buf null, only counts them. lo and hi are the
// warp's room for the constraints' list bounds.
// kept and klen are SP_SRC's buffer and its length where the walk made it
// (kept is null where it did not: a seed's depths were walked in the
// launch before).
__device__ uint32_t sp_level(const uint32_t* prog, const uint32_t* cons, const uint32_t* verts, const uint32_t* offs,
                             const uint32_t* nbrs, uint32_t d, uint32_t placed, const uint32_t* idx, const uint32_t* vid,
                             uint32_t* lo, uint32_t* hi, uint32_t* buf, const uint32_t* kept, uint32_t klen, uint32_t lane)
{
    const uint32_t* P = prog + d * SP_STRIDE;
    uint32_t ncons = P[SP_NCONS];
    // Lane c finds constraint c's list; the shortest drives.
    uint32_t len = 0xFFFFFFFFu;
    if (lane < ncons) {
        const uint32_t* C = cons + (P[SP_CONS] + lane) * SC_STRIDE;
        const uint32_t* off = offs + C[SC_OFF];
        uint32_t x = idx[C[SC_FROM]];
        uint32_t a = C[SC_NBR] + off[x], b = C[SC_NBR] + off[x + 1];
        lo[lane] = a;
        hi[lane] = b;
        len = b - a;
    }
    uint32_t best = len, drv = lane;
    for (int s = 16; s > 0; s >>= 1) {
        uint32_t ol = __shfl_xor_sync(0xFFFFFFFFu, best, s);
        uint32_t od = __shfl_xor_sync(0xFFFFFFFFu, drv, s);
        if (ol < best || (ol == best && od < drv)) {
            best = ol;
            drv = od;
        }
    }
    __syncwarp();
    if (best == 0)
        return 0;
    uint32_t above = P[SP_ABOVE], below = P[SP_BELOW];
    const uint32_t* dv = verts + P[SP_VERTS];
    uint32_t cnt = 0;
    if (kept && klen < best) {
        const uint32_t* kv = verts + prog[P[SP_SRC] * SP_STRIDE + SP_VERTS];
        uint32_t cover = P[SP_COVER], same = P[SP_SAME], nv = P[SP_NVERTS];
        for (uint32_t base = 0; base < klen; base += WARP) {
            bool ok = base + lane < klen;
            uint32_t y = 0, v = 0;
            if (ok) {
                y = kept[base + lane];
                v = kv[y];
                if (!same) { // the source's index of v to this depth's
                    y = sp_search(dv, 0, nv, v);
                    ok = y < nv && dv[y] == v;
                }
                for (uint32_t c = 0; c < ncons && ok; c++) {
                    if ((cover >> c) & 1)
                        continue;
                    uint32_t p = sp_search(nbrs, lo[c], hi[c], y);
                    ok = p < hi[c] && nbrs[p] == y;
                }
                ok = ok && sp_fits(vid, placed, above, below, v);
            }
            cnt += sp_emit(buf, cnt, ok, y, lane);
        }
        __syncwarp();
        return cnt;
    }
    uint32_t dlo = lo[drv];
    for (uint32_t base = 0; base < best; base += WARP) {
        bool ok = base + lane < best;
        uint32_t y = 0, v = 0;
        if (ok) {
            y = nbrs[dlo + base + lane];
            for (uint32_t c = 0; c < ncons && ok; c++) {
                if (c == drv)
                    continue;
                uint32_t p = sp_search(nbrs, lo[c], hi[c], y);
                ok = p < hi[c] && nbrs[p] == y;
            }
        }
        if (ok) {
            v = dv[y];
            ok = sp_fits(vid, placed, above, below, v);
        }
        cnt += sp_emit(buf, cnt, ok, y, lane);
    }
    __syncwarp();
    return cnt;
}

// first index in a[lo, hi) whose entry is above y
__device__ __forceinline__ uint32_t sp_above(const uint32_t* a, uint32_t lo, uint32_t hi, uint32_t y)
{
    while (lo < hi) {
        uint32_t m = (lo + hi) >> 1;
        if (a[m] <= y)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

// sp_count_one counts the candidates of the last depth d where it has one
// constraint: the entries of its list within the symmetry bounds, less the
// placed vertices among them. A list's candidate indexes ascend with their
// data vertices (the depth's candidates are ascending), so each bound is a
// binary search, and a lane looks up one placed vertex: the cost of a count
// does not grow with the list, as it does in sp_level. It returns
// 0xFFFFFFFF for a list of two warps' width or less, which sp_level counts
// faster: on yeast's short lists the searches made dense_24_10 25% slower.
__device__ uint32_t sp_count_one(const uint32_t* prog, const uint32_t* cons, const uint32_t* verts,
                                 const uint32_t* offs, const uint32_t* nbrs, uint32_t d, const uint32_t* idx,
                                 const uint32_t* vid, uint32_t lane)
{
    const uint32_t* P = prog + d * SP_STRIDE;
    const uint32_t* C = cons + P[SP_CONS] * SC_STRIDE;
    const uint32_t* off = offs + C[SC_OFF];
    uint32_t x = idx[C[SC_FROM]];
    uint32_t lo = C[SC_NBR] + off[x], hi = C[SC_NBR] + off[x + 1];
    if (hi - lo <= 2 * WARP) // two steps of sp_level cost less than the searches
        return 0xFFFFFFFFu;
    const uint32_t* dv = verts + P[SP_VERTS];
    uint32_t nv = P[SP_NVERTS], above = P[SP_ABOVE], below = P[SP_BELOW];
    for (uint32_t a = 0; a < d && lo < hi; a++) {
        if ((above >> a) & 1)
            lo = sp_search(nbrs, lo, hi, sp_above(dv, 0, nv, vid[a]));
        if ((below >> a) & 1)
            hi = sp_search(nbrs, lo, hi, sp_search(dv, 0, nv, vid[a]));
    }
    if (lo >= hi)
        return 0;
    bool in = false;
    if (lane < d) {
        uint32_t y = sp_search(dv, 0, nv, vid[lane]);
        if (y < nv && dv[y] == vid[lane]) {
            uint32_t p = sp_search(nbrs, lo, hi, y);
            in = p < hi && nbrs[p] == y;
        }
    }
    return hi - lo - __popc(__ballot_sync(0xFFFFFFFFu, in));
}

// sp_count counts the candidates of the last depth d.
__device__ __forceinline__ uint32_t sp_count(const uint32_t* prog, const uint32_t* cons, const uint32_t* verts,
                                             const uint32_t* offs, const uint32_t* nbrs, uint32_t d,
                                             const uint32_t* idx, const uint32_t* vid, uint32_t* lo, uint32_t* hi,
                                             const uint32_t* kept, uint32_t klen, uint32_t lane)
{
    if (prog[d * SP_STRIDE + SP_NCONS] == 1) {
        uint32_t n = sp_count_one(prog, cons, verts, offs, nbrs, d, idx, vid, lane);
        if (n != 0xFFFFFFFFu)
            return n;
    }
    return sp_level(prog, cons, verts, offs, nbrs, d, d, idx, vid, lo, hi, nullptr, kept, klen, lane);
}

// sp_kept returns the buffer of depth d's SP_SRC and sets *klen to its
// length, where this walk made it: not for a source above the seed's depth.
__device__ __forceinline__ const uint32_t* sp_kept(const uint32_t* prog, uint32_t* mine, const uint32_t* len, uint32_t d,
                                                   uint32_t seed_depth, uint32_t* klen)
{
    uint32_t src = prog[d * SP_STRIDE + SP_SRC];
    *klen = 0;
    if (src == SP_NONE || src < seed_depth)
        return nullptr;
    *klen = len[src];
    return mine + prog[src * SP_STRIDE + SP_BUF];
}

// sp_in says whether data vertex v is among the candidates buf[0, n) of
// the depth whose candidates are dv (ascending either way).
__device__ __forceinline__ bool sp_in(const uint32_t* dv, const uint32_t* buf, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t m = (lo + hi) >> 1;
        if (dv[buf[m]] < v)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < n && dv[buf[lo]] == v;
}

// sp_tail counts the matches below the placed depths [0, tail): it makes
// the candidates of every depth from tail to n-1 (len[d], in d's buffer)
// and multiplies the groups' counts of distinct picks, each the sum that
// incremental.DistinctPicks computes, over the sizes of its levels'
// intersections. Every lane computes the same sum.
//
// The sums and the product run mod 2^128, exact whenever the true count is
// below 2^128; that count is at most the product of the tail levels'
// candidate counts, and where that product reaches 2^128 sp_tail sets
// *too_large instead, for the host to report the count as past 2^128
// (graph.Count saturated). Where the sets overlap, the true count may fall
// short of such a product: the CPU's math/big sum (DistinctPicks) counts
// it exactly, the GPU reports it saturated.
__device__ U128 sp_tail(const uint32_t* prog, const uint32_t* cons, const uint32_t* verts,
                        const uint32_t* offs, const uint32_t* nbrs, uint32_t n, uint32_t tail,
                        uint32_t seed_depth, const uint32_t* idx, const uint32_t* vid, uint32_t* lo,
                        uint32_t* hi, uint32_t* mine, uint32_t* len, uint32_t lane, bool* too_large)
{
    uint32_t groups = 0;
    for (uint32_t d = tail; d < n; d++) {
        uint32_t klen;
        const uint32_t* kept = sp_kept(prog, mine, len, d, seed_depth, &klen);
        len[d] = sp_level(prog, cons, verts, offs, nbrs, d, tail, idx, vid, lo, hi, mine + prog[d * SP_STRIDE + SP_BUF],
                          kept, klen, lane);
        if (len[d] == 0)
            return u128(0);
        groups = max(groups, prog[d * SP_STRIDE + SP_GROUP] + 1);
    }
    // bound, the product of the candidate counts, checked against 2^128:
    // bound×len is (bound.hi×len)·2^64 + bound.lo×len, whose high word is
    // bound.hi×len plus the high word of bound.lo×len.
    U128 bound = u128(1);
    for (uint32_t d = tail; d < n; d++) {
        unsigned long long top = __umul64hi(bound.hi, len[d]), mid = bound.hi * len[d];
        unsigned long long carry = __umul64hi(bound.lo, len[d]);
        if (top != 0 || mid + carry < mid) {
            *too_large = true;
            return u128(0);
        }
        bound = u128_mul(bound, len[d]);
    }
    U128 total = u128(1);
    for (uint32_t g = 0; g < groups; g++) {
        uint32_t ds[SP_MAXGROUP], t = 0;
        for (uint32_t d = tail; d < n; d++)
            if (prog[d * SP_STRIDE + SP_GROUP] == g)
                ds[t++] = d;
        // size[mask]: the size of the intersection of the masked levels'
        // candidates, the shortest scanned and the others searched.
        unsigned long long size[1 << SP_MAXGROUP];
        for (uint32_t mask = 1; mask < (1u << t); mask++) {
            uint32_t drv = 0xFFFFFFFFu;
            for (uint32_t i = 0; i < t; i++)
                if (((mask >> i) & 1) && (drv == 0xFFFFFFFFu || len[ds[i]] < len[ds[drv]]))
                    drv = i;
            if ((mask & (mask - 1)) == 0) {
                size[mask] = len[ds[drv]];
                continue;
            }
            const uint32_t* dbuf = mine + prog[ds[drv] * SP_STRIDE + SP_BUF];
            const uint32_t* ddv = verts + prog[ds[drv] * SP_STRIDE + SP_VERTS];
            uint32_t c = 0;
            for (uint32_t base = 0; base < len[ds[drv]]; base += WARP) {
                bool ok = base + lane < len[ds[drv]];
                if (ok) {
                    uint32_t v = ddv[dbuf[base + lane]];
                    for (uint32_t i = 0; i < t && ok; i++) {
                        if (i == drv || !((mask >> i) & 1))
                            continue;
                        ok = sp_in(verts + prog[ds[i] * SP_STRIDE + SP_VERTS], mine + prog[ds[i] * SP_STRIDE + SP_BUF],
                                   len[ds[i]], v);
                    }
                }
                c += __popc(__ballot_sync(0xFFFFFFFFu, ok));
            }
            size[mask] = c;
        }
        // picks[u] = Σ over b ⊆ u holding u's lowest of
        // (-1)^(|b|-1) (|b|-1)! size[b] picks[u \ b].
        // Its terms wrap mod 2^128, the sum does not (see above).
        U128 picks[1 << SP_MAXGROUP];
        picks[0] = u128(1);
        for (uint32_t u = 1; u < (1u << t); u++) {
            uint32_t low = u & (0u - u), rest = u ^ low;
            U128 sum = u128(0);
            for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
                uint32_t b = sub | low;
                int k = __popc(b);
                U128 term = u128_mul(picks[u ^ b], size[b]);
                for (int j = 2; j < k; j++)
                    term = u128_mul(term, j);
                sum = u128_add_mod(sum, (k % 2 == 0) ? u128_neg(term) : term);
                if (sub == 0)
                    break;
            }
            picks[u] = sum;
        }
        total = u128_mul2(total, picks[(1u << t) - 1]);
        if (total.lo == 0 && total.hi == 0)
            break;
    }
    __syncwarp();
    return total;
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * WARP, 8)
match_space(const uint32_t* prog, const uint32_t* cons, const uint32_t* verts, const uint32_t* offs, const uint32_t* nbrs,
            uint32_t n, uint32_t tail, const uint32_t* seeds, uint32_t seed_depth, unsigned long long nseeds,
            unsigned long long* next_seed, uint32_t* out, uint32_t out_depth, unsigned long long out_cap,
            unsigned long long* out_count, uint32_t* overflow, uint32_t* scratch, uint32_t warp_words,
            unsigned long long* count)
{
    // count is three words: the 128-bit count, low word first (add_count),
    // and a flag set where it passed 2^128 (sp_tail's bound, the warp's
    // sum, or the sum of the warps').
    __shared__ uint32_t s_idx[WARPS_PER_BLOCK][MAXN], s_vid[WARPS_PER_BLOCK][MAXN];
    __shared__ uint32_t s_lo[WARPS_PER_BLOCK][WARP], s_hi[WARPS_PER_BLOCK][WARP];
    uint32_t wib = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    uint32_t *idx = s_idx[wib], *vid = s_vid[wib], *lo = s_lo[wib], *hi = s_hi[wib];
    unsigned long long warp = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + wib;
    uint32_t* mine = scratch + warp * warp_words;
    uint32_t len[MAXN], pos[MAXN]; // the walk's state, the same in every lane
    U128 cnt = u128(0);
    bool too_large = false;
    for (;;) {
        unsigned long long s = 0;
        if (lane == 0)
            s = atomicAdd(next_seed, 1ull);
        s = __shfl_sync(0xFFFFFFFFu, s, 0);
        if (s >= nseeds || (out_depth && *(volatile uint32_t*)overflow))
            break;
        __syncwarp();
        if (lane < seed_depth) {
            uint32_t x = seeds[s * seed_depth + lane];
            idx[lane] = x;
            vid[lane] = verts[prog[lane * SP_STRIDE + SP_VERTS] + x];
        }
        __syncwarp();
        uint32_t d = seed_depth;
        if (d == tail && tail < n - 1) {
            U128 t = sp_tail(prog, cons, verts, offs, nbrs, n, tail, seed_depth, idx, vid, lo, hi, mine, len, lane,
                             &too_large);
            cnt = u128_add(cnt, t, &too_large);
            continue;
        }
        if (d == n - 1) {
            cnt = u128_add(cnt, u128(sp_count(prog, cons, verts, offs, nbrs, d, idx, vid, lo, hi, nullptr, 0, lane)),
                           &too_large);
            continue;
        }
        len[d] = sp_level(prog, cons, verts, offs, nbrs, d, d, idx, vid, lo, hi, mine + prog[d * SP_STRIDE + SP_BUF],
                          nullptr, 0, lane);
        pos[d] = 0;
        for (;;) {
            if (pos[d] == len[d]) {
                if (d == seed_depth)
                    break;
                d--;
                continue;
            }
            uint32_t x = mine[prog[d * SP_STRIDE + SP_BUF] + pos[d]];
            pos[d]++;
            // Every lane is done with the last placement (sp_count_one, a
            // seed's write, may return without a barrier) before lane 0
            // makes the next.
            __syncwarp();
            if (lane == 0) {
                idx[d] = x;
                vid[d] = verts[prog[d * SP_STRIDE + SP_VERTS] + x];
            }
            __syncwarp();
            uint32_t nd = d + 1;
            if (nd == out_depth) {
                unsigned long long slot = 0;
                if (lane == 0)
                    slot = atomicAdd(out_count, 1ull);
                slot = __shfl_sync(0xFFFFFFFFu, slot, 0);
                if (slot >= out_cap) {
                    if (lane == 0)
                        *overflow = 1;
                    break;
                }
                if (lane < nd)
                    out[slot * nd + lane] = idx[lane];
                continue;
            }
            if (nd == tail && tail < n - 1) {
                U128 t = sp_tail(prog, cons, verts, offs, nbrs, n, tail, seed_depth, idx, vid, lo, hi, mine, len, lane,
                                 &too_large);
                cnt = u128_add(cnt, t, &too_large);
                continue;
            }
            if (nd == n - 1) {
                uint32_t klen;
                const uint32_t* kept = sp_kept(prog, mine, len, nd, seed_depth, &klen);
                cnt = u128_add(cnt, u128(sp_count(prog, cons, verts, offs, nbrs, nd, idx, vid, lo, hi, kept, klen, lane)),
                               &too_large);
                continue;
            }
            d = nd;
            uint32_t klen;
            const uint32_t* kept = sp_kept(prog, mine, len, d, seed_depth, &klen);
            len[d] = sp_level(prog, cons, verts, offs, nbrs, d, d, idx, vid, lo, hi, mine + prog[d * SP_STRIDE + SP_BUF],
                              kept, klen, lane);
            pos[d] = 0;
        }
    }
    if (lane == 0 && (cnt.lo || cnt.hi) && add_count(count, cnt))
        too_large = true;
    if (lane == 0 && too_large)
        count[2] = 1;
}
