// gcsm's incremental matching kernel (docs/architecture.md and docs/gpu.md; the GCSM paper,
// section V-C; STMatch's warp-per-unit depth-first walk).
//
// Each warp takes work units (term, changed edge) from a global counter and
// walks the term's matching order depth first. A level's candidates are made
// by the whole warp: the lanes read 32 consecutive entries of the driver list
// (the constraint with the shortest list), check each against the level's
// other constraints by binary search, and compact the survivors into the
// level's buffer with a ballot. The buffer holds CHUNK candidates; when it
// runs out the warp resumes scanning the driver where it stopped, so a level
// costs a fixed amount of memory whatever the degree. The static matcher's
// plans add kept lists (enter_kept), bounded by the launch's keep_cap.
//
// Lists are read where they are: through the device mapping of pinned host
// memory (zero-copy placement), from a device mirror (device placement), or
// from a DCSR cache block in device memory (the cache placements). The
// kernel does not know which; it gets base pointers, and the executor
// points the per-vertex table rows of cached lists into the block. It only
// tells the block's reads apart, to count them.
//
// The views, the label-ordered lists and the flip rule mirror the CPU walker
// in incremental/walk.go and incremental/cpu.go exactly: the two executors
// must find the same matches.

#include <stdint.h>

#define WARP 32
#define CHUNK 128
#define WILDCARD 0xFFFFFFFFu
#define TOMB 0x80000000u
#define IDMASK 0x7FFFFFFFu

// Counts are 128 bits (graph.Count on the host): a dense pattern's matches,
// counted from the tail rather than walked, pass 2^64. U128 is two words,
// not unsigned __int128, so that no device support for the compiler's
// 128-bit type is assumed.
struct U128 {
    unsigned long long lo, hi;
};

__device__ __forceinline__ U128 u128(unsigned long long x)
{
    U128 r;
    r.lo = x;
    r.hi = 0;
    return r;
}

// u128_add is a+b mod 2^128, setting *wrapped when the sum reached 2^128.
__device__ __forceinline__ U128 u128_add(U128 a, U128 b, bool* wrapped)
{
    U128 r;
    r.lo = a.lo + b.lo;
    unsigned long long carry = r.lo < a.lo;
    unsigned long long hi = a.hi + b.hi;
    r.hi = hi + carry;
    if (hi < a.hi || r.hi < hi)
        *wrapped = true;
    return r;
}

// u128_add_mod is a+b mod 2^128, for sums whose terms may wrap but whose
// total does not.
__device__ __forceinline__ U128 u128_add_mod(U128 a, U128 b)
{
    U128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

// u128_mul is a×b mod 2^128.
__device__ __forceinline__ U128 u128_mul(U128 a, unsigned long long b)
{
    U128 r;
    r.lo = a.lo * b;
    r.hi = a.hi * b + __umul64hi(a.lo, b);
    return r;
}

// u128_mul2 is a×b mod 2^128.
__device__ __forceinline__ U128 u128_mul2(U128 a, U128 b)
{
    U128 r = u128_mul(a, b.lo);
    r.hi += a.lo * b.hi;
    return r;
}

// u128_neg is -a mod 2^128.
__device__ __forceinline__ U128 u128_neg(U128 a)
{
    U128 r;
    r.lo = 0ull - a.lo;
    r.hi = ~a.hi + (a.lo == 0);
    return r;
}

// add_count adds x to the 128-bit count at c (c[0] the low word, c[1] the
// high) with two atomics: an add that carries out of the low word adds its
// carry to the high word, so that concurrent adds leave the exact sum once
// all are done. It returns true when the high word wrapped: the count
// passed 2^128.
__device__ __forceinline__ bool add_count(unsigned long long* c, U128 x)
{
    bool wrapped = false;
    unsigned long long hi = x.hi;
    if (x.lo) {
        unsigned long long old = atomicAdd(c, x.lo);
        if (old + x.lo < old && ++hi == 0)
            wrapped = true;
    }
    if (hi) {
        unsigned long long old = atomicAdd(c + 1, hi);
        if (old + hi < old)
            wrapped = true;
    }
    return wrapped;
}

// counts_128 does nothing: its presence in the image tells the host that
// the kernels write 128-bit counts (kernels/gpu.go), where an image built
// before them, read with the host's 128-bit layout, would give wrong ones.
extern "C" __global__ void counts_128() {}

// Views (incremental/views.go).
#define V_OLD 0
#define V_NEW 1
#define V_STABLE 2

// Directions (query.Dir).
#define D_OUT 0
#define D_IN 1
#define D_ANY 2

// Term program layout, written by kernels/plan.go.
#define T_QUERY 0
#define T_EDGE 1
#define T_N 2
#define T_ELABEL 3
#define T_BOTH 4
#define T_ANY 5
#define T_FLIP 6
#define T_LEVELS 8
#define L_WORDS 11
#define L_LABEL 0
#define L_NCONS 1
#define L_CONS 2
#define L_NABOVE 3
#define L_ABOVE 4
#define L_NBELOW 5
#define L_BELOW 6
#define L_CAND 7 // offset of the level's candidate bitset in cands, or NO_CAND
#define NO_CAND 0xFFFFFFFFu
// Kept intersections (the static plan only; see enter_kept). L_SRC is an earlier
// level whose constraints are all among this level's, or NO_SRC; bit i of
// L_COVER says constraint i is one of them. L_KEEP is 1 + the level's slot
// in the warp's kept lists when a deeper level reads it, else 0.
#define L_SRC 8
#define L_COVER 9
#define L_KEEP 10
#define NO_SRC 0xFFFFFFFFu
#define C_WORDS 5
#define C_FROM 0
#define C_LABEL 1
#define C_DIR 2
#define C_VPOS 3
#define C_VNEG 4

// Per-level walk state in the warp's scratch.
#define S_DRV 0
#define S_GENERAL 1
#define S_NPARTS 2
#define S_PARTS 3 // 4 parts of 4 words: list (0 out, 1 in), part (0 sorted, 1 appended), lo, hi
#define S_POS 19
#define S_END 20
#define S_CNT 21
#define S_IDX 22
#define S_KLEN 23 // the length of the level's kept list, or NO_KEEP
#define S_WORDS 24
#define NO_KEEP 0xFFFFFFFFu
// S_DRV beyond the level's constraints: the driver is a kept list, the
// L_SRC level's or the level's own.
#define DRV_SRC 0x80000000u
#define DRV_OWN 0x80000001u
#define S_STRIDE (S_WORDS + CHUNK)

// Graph is the graph as the executor describes it for a batch's launches
// (kernels/gpu.go, graphDesc, has the same layout), plus where this thread
// counts its reads.
struct Graph {
    const unsigned long long* slab_ids;  // per slab: address of its ids
    const unsigned long long* slab_lbls; // per slab: address of its edge labels, or 0
    const uint32_t* out_tab;             // per vertex: slab, off, n, app, tomb
    const uint32_t* in_tab;              // the same for in-lists (out_tab when undirected)
    const uint32_t* vlabel;
    unsigned long long cache_lo, cache_hi; // the cache block's addresses [lo, hi); lo = hi without one
    uint32_t one_vlabel;
    uint32_t multi;
    uint32_t directed;
    uint32_t pad;
    // reads[0] counts the bytes of neighbour lists this thread read through
    // the slabs (PCIe in the zero-copy and cache placements, GPU memory in
    // the device one), reads[1] those it read from the cache block. Set by
    // the kernel; the executor writes 0.
    unsigned long long* reads;
    // The search lookup (Options.SearchLookup): the cache block's arrays
    // (cache/FORMAT.md) and its number of lists, c_k; c_k is 0 in the
    // table lookup, where the table rows of the cached lists point into
    // the block instead.
    const uint32_t* c_rowidx;
    const uint32_t* c_rowptr;
    const uint32_t* c_colidx;
    const uint32_t* c_lbls;
    uint32_t c_k;
    uint32_t pad2;
};

static_assert(sizeof(Graph) == 120, "kernels/gpu.go's graphDesc has 120 bytes");

// rd reads a neighbour-list word and counts it where it was read from.
__device__ __forceinline__ uint32_t rd(const Graph& g, const uint32_t* p)
{
    unsigned long long a = (unsigned long long)p;
    g.reads[a - g.cache_lo < g.cache_hi - g.cache_lo] += 4;
    return *p;
}

struct Adj {
    const uint32_t* ids;
    const uint32_t* lbl;
    uint32_t n, app, tomb;
};

__device__ __forceinline__ Adj get_adj(const Graph& g, uint32_t v, uint32_t in)
{
    const uint32_t* t = (in ? g.in_tab : g.out_tab) + 5ull * v;
    Adj a;
    if (g.c_k > 0) {
        // The paper's lookup: a binary search of the block's rowidx, then
        // the list's offsets in rowptr; the row is read on a miss. A hit
        // reads the row's tombstone count, which the block does not hold.
        uint32_t k = g.directed ? (v << 1 | in) : v;
        uint32_t lo = 0, hi = g.c_k;
        while (lo < hi) {
            uint32_t mid = (lo + hi) >> 1;
            if (g.c_rowidx[mid] < k)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < g.c_k && g.c_rowidx[lo] == k) {
            uint32_t s = g.c_rowptr[2 * lo], ap = g.c_rowptr[2 * lo + 1], e = g.c_rowptr[2 * lo + 2];
            a.ids = g.c_colidx + s;
            a.lbl = g.c_lbls ? g.c_lbls + s : 0;
            a.n = e - s;
            a.app = ap == 0xffffffffu ? a.n : ap - s;
            a.tomb = t[4];
            return a;
        }
    }
    uint32_t slab = t[0], off = t[1];
    a.n = t[2];
    a.app = t[3];
    a.tomb = t[4];
    if (a.n == 0) {
        a.ids = 0;
        a.lbl = 0;
        return a;
    }
    a.ids = (const uint32_t*)g.slab_ids[slab] + off;
    unsigned long long lb = g.slab_lbls[slab];
    a.lbl = lb ? (const uint32_t*)lb + off : 0;
    return a;
}

__device__ __forceinline__ unsigned long long key(const Graph& g, uint32_t w)
{
    if (g.one_vlabel)
        return w;
    return ((unsigned long long)g.vlabel[w] << 32) | w;
}

// lower bound of w's key in ids[lo, hi), tombstone bits ignored
__device__ uint32_t search(const Graph& g, const uint32_t* ids, uint32_t lo, uint32_t hi, uint32_t w)
{
    unsigned long long k = key(g, w);
    while (lo < hi) {
        uint32_t m = (lo + hi) >> 1;
        if (key(g, rd(g, ids + m) & IDMASK) < k)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

__device__ uint32_t label_bound(const Graph& g, const uint32_t* ids, uint32_t lo, uint32_t hi, unsigned long long k)
{
    while (lo < hi) {
        uint32_t m = (lo + hi) >> 1;
        if (key(g, rd(g, ids + m) & IDMASK) < k)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

// range of entries with vertex label l in ids[lo, hi)
__device__ void label_range(const Graph& g, const uint32_t* ids, uint32_t lo, uint32_t hi, uint32_t l,
                            uint32_t* rlo, uint32_t* rhi)
{
    if (l == WILDCARD || hi == lo) {
        *rlo = lo;
        *rhi = hi;
        return;
    }
    if (g.one_vlabel) {
        if (g.vlabel[rd(g, ids + lo) & IDMASK] != l) {
            *rlo = *rhi = lo;
        } else {
            *rlo = lo;
            *rhi = hi;
        }
        return;
    }
    *rlo = label_bound(g, ids, lo, hi, (unsigned long long)l << 32);
    *rhi = label_bound(g, ids, *rlo, hi, (unsigned long long)(l + 1) << 32);
}

// probe: does a hold w with an edge label the filter accepts, before the
// batch (old) and after it (nw), and untouched by it (kept)? An entry the
// batch renewed is in both but not kept. (dyngraph/probe.go Probe)
__device__ void probe(const Graph& g, const Adj& a, uint32_t w, uint32_t label, bool* old, bool* nw, bool* kept)
{
    if (a.app > 0) {
        uint32_t i = search(g, a.ids, 0, a.app, w);
        for (; i < a.app && (rd(g, a.ids + i) & IDMASK) == w; i++) {
            if (a.lbl && label != WILDCARD && rd(g, a.lbl + i) != label)
                continue;
            *old = true;
            if ((a.ids[i] & TOMB) == 0)
                *nw = *kept = true;
        }
    }
    if (!*nw && a.n > a.app) {
        uint32_t j = search(g, a.ids, a.app, a.n, w);
        for (; j < a.n && rd(g, a.ids + j) == w; j++) {
            if (!a.lbl || label == WILDCARD || rd(g, a.lbl + j) == label) {
                *nw = true;
                break;
            }
        }
    }
}

// holds applies a view to a probe. A query edge that one data edge stands
// for (simple) is stable only where that edge is kept; one that several can
// stand for is stable where some edge is there before and after.
// (query/views.go Holds, HoldsEntry)
__device__ __forceinline__ bool holds(uint32_t view, bool old, bool nw, bool kept, bool simple)
{
    if (view == V_OLD)
        return old;
    if (view == V_NEW)
        return nw;
    return simple ? kept : old && nw;
}

struct Walk {
    const Graph* g;
    const uint32_t* prog; // the term's program
    const uint32_t* cands; // the static matcher's candidate bitsets (L_CAND)
    uint32_t* m;          // data vertex per depth (shared, per warp)
    uint32_t* st;         // per-level state (global scratch)
    int sign;             // +1 or -1
    uint32_t n;
    uint32_t* keep;       // the warp's kept lists, keep_cap words per slot, or 0
    uint32_t keep_cap;
};

__device__ __forceinline__ const uint32_t* level(const Walk& w, uint32_t d)
{
    return w.prog + T_LEVELS + d * L_WORDS;
}

// kept: level d's kept list (L_KEEP set).
__device__ __forceinline__ uint32_t* kept(const Walk& w, uint32_t d)
{
    return w.keep + (unsigned long long)(level(w, d)[L_KEEP] - 1) * w.keep_cap;
}

__device__ __forceinline__ uint32_t cons_view(const Walk& w, const uint32_t* c)
{
    return w.sign > 0 ? c[C_VPOS] : c[C_VNEG];
}

__device__ __forceinline__ bool simple_cons(const Walk& w, const uint32_t* c)
{
    return c[C_DIR] != D_ANY && (!w.g->multi || c[C_LABEL] != WILDCARD);
}

__device__ bool check_cons(const Walk& w, const uint32_t* c, uint32_t v)
{
    uint32_t x = w.m[c[C_FROM]];
    bool old = false, nw = false, kept = false;
    uint32_t dir = c[C_DIR];
    if (dir == D_OUT || dir == D_ANY) {
        Adj a = get_adj(*w.g, x, 0);
        probe(*w.g, a, v, c[C_LABEL], &old, &nw, &kept);
    }
    if (dir == D_IN || dir == D_ANY) {
        Adj a = get_adj(*w.g, x, w.g->directed ? 1 : 0);
        probe(*w.g, a, v, c[C_LABEL], &old, &nw, &kept);
    }
    return holds(cons_view(w, c), old, nw, kept, simple_cons(w, c));
}

// in_cands: is v in level lv's candidate set? Levels without one take any.
__device__ __forceinline__ bool in_cands(const Walk& w, const uint32_t* lv, uint32_t v)
{
    uint32_t c = lv[L_CAND];
    return c == NO_CAND || (w.cands[c + (v >> 5)] >> (v & 31) & 1);
}

// vertex checks of level d: label, candidate set, injectivity, symmetry
// breaking
__device__ bool admissible(const Walk& w, uint32_t d, uint32_t v)
{
    const uint32_t* lv = level(w, d);
    uint32_t l = lv[L_LABEL];
    if (l != WILDCARD && w.g->vlabel[v] != l)
        return false;
    if (!in_cands(w, lv, v))
        return false;
    for (uint32_t k = 0; k < d; k++)
        if (w.m[k] == v)
            return false;
    const uint32_t* ab = w.prog + lv[L_ABOVE];
    for (uint32_t k = 0; k < lv[L_NABOVE]; k++)
        if (v <= w.m[ab[k]])
            return false;
    const uint32_t* be = w.prog + lv[L_BELOW];
    for (uint32_t k = 0; k < lv[L_NBELOW]; k++)
        if (v >= w.m[be[k]])
            return false;
    return true;
}


__device__ uint32_t list_len(const Walk& w, const uint32_t* c)
{
    uint32_t x = w.m[c[C_FROM]];
    uint32_t n = 0;
    if (c[C_DIR] == D_OUT || c[C_DIR] == D_ANY)
        n += get_adj(*w.g, x, 0).n;
    if (c[C_DIR] == D_IN || c[C_DIR] == D_ANY)
        n += get_adj(*w.g, x, w.g->directed ? 1 : 0).n;
    return n;
}

// enter_lists sets up level d's scan of its driver, the constraint with
// the shortest list, and returns the scan's length. Lane-uniform.
__device__ uint32_t enter_lists(const Walk& w, uint32_t d)
{
    const uint32_t* lv = level(w, d);
    const uint32_t* cons = w.prog + lv[L_CONS];
    uint32_t nc = lv[L_NCONS];
    uint32_t drv = 0, best = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < nc; i++) {
        uint32_t len = list_len(w, cons + i * C_WORDS);
        if (len < best) {
            best = len;
            drv = i;
        }
    }
    const uint32_t* c = cons + drv * C_WORDS;
    uint32_t* s = w.st + d * S_STRIDE;
    bool general = !simple_cons(w, c);
    uint32_t view = cons_view(w, c);
    uint32_t x = w.m[c[C_FROM]];
    uint32_t np = 0, end = 0;
    for (uint32_t k = 0; k < 2; k++) {
        if (k == 0 && c[C_DIR] == D_IN)
            continue;
        if (k == 1 && c[C_DIR] != D_IN && c[C_DIR] != D_ANY)
            continue;
        uint32_t in = (k == 1 && w.g->directed) ? 1 : 0;
        Adj a = get_adj(*w.g, x, in);
        for (uint32_t p = 0; p < 2; p++) {
            if (p == 1 && view != V_NEW)
                continue; // only the new view reads appended entries
            uint32_t lo = p ? a.app : 0, hi = p ? a.n : a.app;
            if (!general)
                label_range(*w.g, a.ids, lo, hi, lv[L_LABEL], &lo, &hi);
            uint32_t* part = s + S_PARTS + np * 4;
            part[0] = in;
            part[1] = p;
            part[2] = lo;
            part[3] = hi;
            np++;
            end += hi - lo;
        }
    }
    s[S_DRV] = drv;
    s[S_GENERAL] = general;
    s[S_NPARTS] = np;
    s[S_POS] = 0;
    s[S_END] = end;
    s[S_CNT] = 0;
    s[S_IDX] = 0;
    return end;
}

// entry_at resolves virtual position pos of level d's driver scan.
__device__ bool entry_at(const Walk& w, const uint32_t* s, const uint32_t* c, uint32_t pos,
                         uint32_t* id, uint32_t* lbl, bool* tomb, uint32_t* part_no, uint32_t* index)
{
    const Graph& g = *w.g;
    uint32_t x = w.m[c[C_FROM]];
    for (uint32_t p = 0; p < s[S_NPARTS]; p++) {
        const uint32_t* part = s + S_PARTS + p * 4;
        uint32_t len = part[3] - part[2];
        if (pos < len) {
            Adj a = get_adj(*w.g, x, part[0]);
            uint32_t i = part[2] + pos;
            uint32_t e = rd(g, a.ids + i);
            *id = e & IDMASK;
            *tomb = part[1] == 0 && (e & TOMB);
            *lbl = a.lbl ? rd(g, a.lbl + i) : WILDCARD;
            *part_no = p;
            *index = i;
            return true;
        }
        pos -= len;
    }
    return false;
}

// first_occurrence: in a general scan, a vertex is taken only at its first
// entry in the scan order, since its predicate covers all its entries.
__device__ bool first_occurrence(const Walk& w, const uint32_t* s, const uint32_t* c, uint32_t part_no, uint32_t index, uint32_t id)
{
    const Graph& g = *w.g;
    uint32_t x = w.m[c[C_FROM]];
    const uint32_t* part = s + S_PARTS + part_no * 4;
    Adj a = get_adj(*w.g, x, part[0]);
    if (index > part[2] && (rd(g, a.ids + (index - 1)) & IDMASK) == id)
        return false;
    for (uint32_t p = 0; p < part_no; p++) {
        const uint32_t* q = s + S_PARTS + p * 4;
        Adj b = get_adj(*w.g, x, q[0]);
        uint32_t i = search(*w.g, b.ids, q[2], q[3], id);
        if (i < q[3] && (rd(g, b.ids + i) & IDMASK) == id)
            return false;
    }
    return true;
}

template <bool admit>
__device__ bool kept_candidate(const Walk& w, uint32_t d, const uint32_t* s, uint32_t pos, uint32_t* out);

// candidate decides whether the lane's driver entry yields a candidate:
// with admit, one of level d's vertices; without, a vertex for its kept
// list, which holds the level's constraints and label. KEEP says whether
// the launch's plan has kept lists (match_keep).
template <bool KEEP, bool admit>
__device__ bool candidate(const Walk& w, uint32_t d, const uint32_t* s, uint32_t pos, uint32_t* out)
{
    const uint32_t* lv = level(w, d);
    const uint32_t* cons = w.prog + lv[L_CONS];
    uint32_t drv = s[S_DRV];
    if (KEEP && drv >= DRV_SRC)
        return kept_candidate<admit>(w, d, s, pos, out);
    const uint32_t* c = cons + drv * C_WORDS;
    uint32_t id, lbl, part_no, index;
    bool tomb;
    if (!entry_at(w, s, c, pos, &id, &lbl, &tomb, &part_no, &index))
        return false;
    bool general = s[S_GENERAL];
    if (!general) {
        if (tomb && cons_view(w, c) != V_OLD)
            return false;
        if (lbl != WILDCARD && c[C_LABEL] != WILDCARD && lbl != c[C_LABEL])
            return false;
    } else if (!first_occurrence(w, s, c, part_no, index, id)) {
        return false;
    }
    if (admit ? !admissible(w, d, id) : (lv[L_LABEL] != WILDCARD && w.g->vlabel[id] != lv[L_LABEL]))
        return false;
    for (uint32_t i = 0; i < lv[L_NCONS]; i++) {
        if (i == drv && !general)
            continue;
        if (!check_cons(w, cons + i * C_WORDS, id))
            return false;
    }
    *out = id;
    return true;
}

// kept_candidate is candidate for a driver that is a kept list: its
// entries hold the constraints of the level that kept it, L_COVER of them
// here, or all of the level's own.
template <bool admit>
__device__ bool kept_candidate(const Walk& w, uint32_t d, const uint32_t* s, uint32_t pos, uint32_t* out)
{
    const uint32_t* lv = level(w, d);
    const uint32_t* cons = w.prog + lv[L_CONS];
    bool own = s[S_DRV] == DRV_OWN;
    uint32_t id = kept(w, own ? d : lv[L_SRC])[pos];
    uint32_t cover = own ? 0xFFFFFFFFu : lv[L_COVER];
    if (admit ? !admissible(w, d, id) : (lv[L_LABEL] != WILDCARD && w.g->vlabel[id] != lv[L_LABEL]))
        return false;
    for (uint32_t i = 0; i < lv[L_NCONS]; i++)
        if (!(cover >> i & 1) && !check_cons(w, cons + i * C_WORDS, id))
            return false;
    *out = id;
    return true;
}

// enter_kept is enter for a level of the static plan that reads or keeps
// an intersection.
//
// A level whose constraints include all of an earlier level's (L_SRC) need
// only scan the vertices that hold that level's constraints, STMatch's
// loop-invariant code motion: in a clique each level's constraints include
// the level above's, and their intersection is far shorter than any one
// list, which the warp would otherwise scan and binary-search the others
// for. The earlier level keeps that intersection whole (L_KEEP): every
// vertex that holds its constraints, before its own vertex checks, since
// the deeper level's are different. A driver longer than keep_cap is
// scanned in chunks as usual, keeping nothing, and the deeper level reads
// the lists.
__device__ void enter_kept(const Walk& w, uint32_t d, uint32_t lane)
{
    const uint32_t* lv = level(w, d);
    uint32_t* s = w.st + d * S_STRIDE;
    uint32_t end = enter_lists(w, d);
    uint32_t src = lv[L_SRC];
    uint32_t klen = src != NO_SRC ? w.st[src * S_STRIDE + S_KLEN] : NO_KEEP;
    if (klen != NO_KEEP && klen <= end) {
        end = klen;
        s[S_DRV] = DRV_SRC;
        s[S_END] = end;
    }
    if (lv[L_KEEP] == 0)
        return;
    s[S_KLEN] = NO_KEEP;
    if (w.keep == 0 || end > w.keep_cap)
        return;
    __syncwarp();
    uint32_t* k = kept(w, d);
    uint32_t cnt = 0;
    for (uint32_t pos = 0; pos < end; pos += WARP) {
        uint32_t v = 0;
        bool ok = pos + lane < end && candidate<true, false>(w, d, s, pos + lane, &v);
        unsigned mask = __ballot_sync(0xFFFFFFFFu, ok);
        if (ok)
            k[cnt + __popc(mask & ((1u << lane) - 1))] = v;
        cnt += __popc(mask);
    }
    __syncwarp();
    s[S_DRV] = DRV_OWN;
    s[S_END] = cnt;
    s[S_KLEN] = cnt;
    __syncwarp();
}

// enter sets up level d's scan. Lane-uniform.
template <bool KEEP>
__device__ __forceinline__ void enter(const Walk& w, uint32_t d, uint32_t lane)
{
    const uint32_t* lv = level(w, d);
    if (!KEEP || (lv[L_SRC] == NO_SRC && lv[L_KEEP] == 0))
        enter_lists(w, d);
    else
        enter_kept(w, d, lane);
}

// refill scans the driver from S_POS until the buffer is nearly full or the
// scan ends; candidates are compacted in order with a ballot.
template <bool KEEP>
__device__ void refill(const Walk& w, uint32_t d, uint32_t lane)
{
    uint32_t* s = w.st + d * S_STRIDE;
    uint32_t* buf = s + S_WORDS;
    uint32_t pos = s[S_POS], end = s[S_END];
    uint32_t cnt = 0;
    while (pos < end && cnt + WARP <= CHUNK) {
        uint32_t v = 0;
        bool ok = pos + lane < end && candidate<KEEP, true>(w, d, s, pos + lane, &v);
        unsigned mask = __ballot_sync(0xFFFFFFFFu, ok);
        if (ok)
            buf[cnt + __popc(mask & ((1u << lane) - 1))] = v;
        cnt += __popc(mask);
        pos += WARP;
    }
    __syncwarp();
    if (lane == 0) {
        s[S_POS] = min(pos, end);
        s[S_CNT] = cnt;
        s[S_IDX] = 0;
    }
    __syncwarp();
}

// count_last counts level d's candidates without enumerating them.
template <bool KEEP>
__device__ unsigned long long count_last(const Walk& w, uint32_t d, uint32_t lane)
{
    const Graph& g = *w.g;
    const uint32_t* lv = level(w, d);
    const uint32_t* cons = w.prog + lv[L_CONS];
    if (lv[L_NCONS] == 1 && lv[L_NABOVE] == 0 && lv[L_NBELOW] == 0 && lv[L_CAND] == NO_CAND && !w.g->multi &&
        cons[C_DIR] != D_ANY) {
        // The label range of the one list, in its view, less the matched
        // vertices in it (incremental/walk.go countLast).
        const uint32_t* c = cons;
        uint32_t view = cons_view(w, c);
        Adj a = get_adj(*w.g, w.m[c[C_FROM]], c[C_DIR] == D_IN && w.g->directed);
        uint32_t lo, hi;
        label_range(*w.g, a.ids, 0, a.app, lv[L_LABEL], &lo, &hi);
        long long n = 0;
        if (lane == 0)
            n = hi - lo;
        if (view != V_OLD && a.tomb > 0)
            for (uint32_t i = lo + lane; i < hi; i += WARP)
                if (rd(g, a.ids + i) & TOMB)
                    n--;
        if (view == V_NEW && lane == 0) {
            uint32_t alo, ahi;
            label_range(*w.g, a.ids, a.app, a.n, lv[L_LABEL], &alo, &ahi);
            n += ahi - alo;
        }
        if (lane < d) {
            uint32_t v = w.m[lane];
            if (lv[L_LABEL] == WILDCARD || w.g->vlabel[v] == lv[L_LABEL]) {
                bool old = false, nw = false, kept = false;
                probe(*w.g, a, v, WILDCARD, &old, &nw, &kept);
                if (holds(view, old, nw, kept, true))
                    n--;
            }
        }
        for (int o = 16; o > 0; o >>= 1)
            n += __shfl_down_sync(0xFFFFFFFFu, n, o);
        return (unsigned long long)__shfl_sync(0xFFFFFFFFu, n, 0);
    }
    enter<KEEP>(w, d, lane);
    __syncwarp();
    uint32_t* s = w.st + d * S_STRIDE;
    unsigned long long total = 0;
    for (uint32_t pos = 0; pos < s[S_END]; pos += WARP) {
        uint32_t v;
        bool ok = pos + lane < s[S_END] && candidate<KEEP, true>(w, d, s, pos + lane, &v);
        total += __popc(__ballot_sync(0xFFFFFFFFu, ok));
    }
    return total;
}

struct Out {
    uint32_t* rec;
    unsigned long long cap; // records
    unsigned long long* count;
    uint32_t words; // per record: unit, sign, then m[0..n)
    uint32_t* overflow;
};

// emit writes the current match (levels 0..n-1, m[n-1] = v for the lanes
// whose ok is set; they must be lanes 0..k-1) and returns how many records
// it wrote. Fewer than k means the buffer is full: the overflow flag is
// set, and the walk parks where it stopped. The records that fit are
// written all the same, and the resumed walk starts after them, so no match
// is written twice or lost.
__device__ uint32_t emit(const Walk& w, const Out& o, unsigned long long unit, bool ok, uint32_t v, uint32_t lane)
{
    unsigned mask = __ballot_sync(0xFFFFFFFFu, ok);
    uint32_t k = __popc(mask);
    if (k == 0)
        return 0;
    unsigned long long base = 0;
    if (lane == 0)
        base = atomicAdd(o.count, (unsigned long long)k);
    base = __shfl_sync(0xFFFFFFFFu, base, 0);
    bool full = base + k > o.cap;
    if (full && lane == 0)
        atomicExch(o.overflow, 1u);
    unsigned long long slot = base + __popc(mask & ((1u << lane) - 1));
    if (ok && slot < o.cap) {
        uint32_t* r = o.rec + slot * (unsigned long long)o.words;
        r[0] = (uint32_t)unit;
        r[1] = w.sign > 0 ? 1 : 0;
        for (uint32_t i = 0; i + 1 < w.n; i++)
            r[2 + i] = w.m[i];
        r[2 + w.n - 1] = v;
    }
    if (!full)
        return k;
    return base >= o.cap ? 0 : (uint32_t)(o.cap - base);
}

// flips_here: lane 0's version of incremental/cpu.go flipsHere.
__device__ bool flips_here(const Walk& w, uint32_t elabel, bool any, uint32_t src, uint32_t label, uint32_t x, uint32_t y)
{
    const Graph& g = *w.g;
    Adj lists[2];
    uint32_t n = 1;
    lists[0] = get_adj(g, x, 0);
    if (any) {
        lists[1] = get_adj(g, x, 1);
        n = 2;
    }
    bool old = false, nw = false, kept = false;
    for (uint32_t k = 0; k < n; k++)
        probe(g, lists[k], y, elabel, &old, &nw, &kept);
    if ((w.sign > 0 && old) || (w.sign < 0 && nw))
        return false;
    uint32_t mine = (g.directed && src != x) ? 1 : 0;
    for (uint32_t k = 0; k < n; k++) {
        const Adj& a = lists[k];
        if (w.sign > 0) {
            uint32_t i = search(g, a.ids, a.app, a.n, y);
            for (; i < a.n && rd(g, a.ids + i) == y; i++) {
                uint32_t l = a.lbl ? rd(g, a.lbl + i) : label;
                if (elabel == WILDCARD || l == elabel)
                    return k == mine && l == label;
            }
        } else {
            uint32_t i = search(g, a.ids, 0, a.app, y);
            for (; i < a.app && (rd(g, a.ids + i) & IDMASK) == y; i++) {
                if ((a.ids[i] & TOMB) == 0)
                    continue;
                uint32_t l = a.lbl ? rd(g, a.lbl + i) : label;
                if (elabel == WILDCARD || l == elabel)
                    return k == mine && l == label;
            }
        }
    }
    return false;
}

// DONE is walk's result when it finished.
#define DONE (-1)

// walk runs the plan from level start on, levels below it already set in
// w.m, and returns DONE, or, when enumeration ran out of buffer, the depth
// where it stopped: walking again from there (resume) with the same w.m and
// scratch goes on after the last match written. resume is that depth, or
// DONE to start afresh.
template <bool KEEP>
__device__ __forceinline__ int walk(const Walk& w, uint32_t mode, const Out& o, unsigned long long unit, uint32_t lane,
                    unsigned long long* count, int start, int resume)
{
    uint32_t n = w.n;
    if (KEEP && resume == DONE && start > 2) {
        // The levels above a seed were placed, not entered: whatever
        // their kept lists hold is another walk's.
        if (lane < (uint32_t)start)
            w.st[lane * S_STRIDE + S_KLEN] = NO_KEEP;
        __syncwarp();
    }
    if (n == (uint32_t)start) {
        if (mode == 0) {
            *count += 1;
            return DONE;
        }
        uint32_t k = emit(w, o, unit, lane == 0, w.m[n - 1], lane);
        *count += k;
        return k == 1 ? DONE : start;
    }
    int d = start;
    if (mode == 0 && n == (uint32_t)start + 1) {
        *count += count_last<KEEP>(w, start, lane);
        return DONE;
    }
    if (resume == DONE)
        enter<KEEP>(w, start, lane);
    else
        d = resume;
    __syncwarp();
    while (d >= start) {
        uint32_t* s = w.st + d * S_STRIDE;
        if (s[S_IDX] >= s[S_CNT]) {
            if (s[S_POS] >= s[S_END]) {
                d--;
                continue;
            }
            refill<KEEP>(w, d, lane);
            continue;
        }
        if ((uint32_t)d == n - 1) {
            // Enumerate mode only: the buffer from S_IDX on is matches.
            uint32_t cnt = s[S_CNT];
            uint32_t* buf = s + S_WORDS;
            for (uint32_t i = s[S_IDX]; i < cnt; i += WARP) {
                bool ok = i + lane < cnt;
                uint32_t v = ok ? buf[i + lane] : 0;
                uint32_t k = emit(w, o, unit, ok, v, lane);
                *count += k;
                if (k < min(cnt - i, (uint32_t)WARP)) {
                    __syncwarp();
                    if (lane == 0)
                        s[S_IDX] = i + k;
                    __syncwarp();
                    return d;
                }
            }
            __syncwarp();
            if (lane == 0)
                s[S_IDX] = cnt;
            __syncwarp();
            continue;
        }
        uint32_t v = (s + S_WORDS)[s[S_IDX]];
        __syncwarp();
        if (lane == 0) {
            s[S_IDX]++;
            w.m[d] = v;
        }
        __syncwarp();
        if (mode == 0 && (uint32_t)d + 2 == n) {
            *count += count_last<KEEP>(w, d + 1, lane);
            continue;
        }
        d++;
        enter<KEEP>(w, d, lane);
        __syncwarp();
    }
    return DONE;
}

#define WARPS_PER_BLOCK 4
#define MAXN 32

// A warp's park record: the unit it stopped in when the record buffer
// filled, and where. Its scratch keeps the walk's levels until the next
// launch, which has the same grid, so the same warp picks the unit up there.
#define P_STATE 0 // 1 when parked in a unit, 2 in a seed
#define P_UNIT 1  // two words, low first: the unit, or the seed's index
#define P_ORIENT 3
#define P_DEPTH 4
#define P_M 5 // MAXN words: w.m
#define PARK_WORDS (P_M + MAXN)
static_assert(MAXN == WARP, "a lane per matched vertex: parking copies w.m a word per lane");

// walk_seed walks seed i from its depth, or resumes it at depth resume
// with w.m restored. Deeper than split it goes to the plan's end in mode;
// an expansion (split deeper than the seed) stops plans deeper than split
// at that level and writes the partial matches as seeds, finishing the
// others' counts itself. It returns true when the walk parked (the record
// buffer is full) and the warp must stop.
template <bool KEEP>
__device__ bool walk_seed(Walk& w, uint32_t mode, const Out& o, uint32_t lane,
                          const uint32_t* prog, const uint32_t* term_off, uint32_t nchanges,
                          unsigned long long* counts, const uint32_t* seeds, uint32_t seed_words, uint32_t split,
                          unsigned long long i, int resume, uint32_t* pk)
{
    uint32_t depth = seed_words - 2;
    const uint32_t* rec = seeds + i * (unsigned long long)seed_words;
    unsigned long long unit = rec[0];
    const uint32_t* p = prog + term_off[unit / nchanges];
    w.prog = p;
    w.sign = rec[1] ? 1 : -1;
    bool seeding = split > depth && p[T_N] > split;
    uint32_t umode = seeding ? 1 : (split > depth ? 0 : mode);
    w.n = seeding ? split : p[T_N];
    if (resume == DONE && lane < depth)
        w.m[lane] = rec[2 + lane];
    __syncwarp();
    unsigned long long cnt = 0;
    int stop = walk<KEEP>(w, umode, o, unit, lane, &cnt, (int)depth, resume);
    if (lane == 0 && cnt > 0 && !seeding)
        add_count(counts + 4 * p[T_QUERY] + (w.sign > 0 ? 0 : 2), u128(cnt)); // cannot wrap: see match_units
    if (stop == DONE || !pk)
        return stop != DONE;
    pk[P_M + lane] = w.m[lane];
    if (lane == 0) {
        pk[P_UNIT] = (uint32_t)i;
        pk[P_UNIT + 1] = (uint32_t)(i >> 32);
        pk[P_DEPTH] = (uint32_t)stop;
        pk[P_STATE] = 2;
    }
    __syncwarp();
    return true;
}

// match_delta runs work units. A unit is (term, changed edge); with seeds
// set, a unit is instead a seed: a partial match of levels 0..seed_words-3
// that an earlier launch with split set wrote as a record (an expansion
// launch). Splitting deep plans this way spreads one heavy unit over many
// warps, where a single warp would walk it alone. An expansion launch walks
// units, or seeds when split is deeper than they are, down to level split-1
// and writes the partial matches to out_rec as seeds.
//
// In enumerate mode a full record buffer stops the launch: every warp parks
// its unit (park, PARK_WORDS per warp), the host drains the buffer, and the
// next launch, with next_unit left as it was, resumes the parked units
// before it takes new ones. Without park (the expansion launch) a full
// buffer just stops the launch, which the host then discards.
//
// match_keep is match_delta for a static plan with kept lists (enter_kept).
// The two are one body compiled twice, so that the kept lists' code costs
// match_delta nothing: compiled into it, it made every static and
// incremental walk 10-30% slower (registers and inlining).
//
// Both hold to 64 registers, so that the host's 8 blocks a multiprocessor
// are all resident, with walk inlined. Left to itself the compiler took 80
// to 128 registers once walk was a template, or kept walk a call of its
// own; inlined under the bound, match_delta walks unlabeled 5-vertex
// patterns 24% faster and counts a batch of 4,096 for the house and the
// 5-cycle 18-22% faster than before the kept lists (H100).
template <bool KEEP>
__device__ __forceinline__ void
match_units(const uint32_t* prog, const uint32_t* term_off, uint32_t nterms,
            const uint32_t* changes, uint32_t nchanges,
            const Graph* graph,
            unsigned long long* counts, uint32_t* scratch,
            unsigned long long* next_unit, unsigned long long total_units,
            uint32_t mode, uint32_t* out_rec, unsigned long long out_cap, unsigned long long* out_count,
            uint32_t out_words, uint32_t* park, uint32_t* overflow,
            uint32_t split, const uint32_t* seeds, uint32_t seed_words, unsigned long long* list_bytes,
            const uint32_t* cands, uint32_t* keep, uint32_t keep_cap, uint32_t keep_slots)
{
    __shared__ uint32_t sm[WARPS_PER_BLOCK][MAXN];
    uint32_t lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    unsigned long long warp = (unsigned long long)blockIdx.x * WARPS_PER_BLOCK + wib;
    Graph g = *graph;
    unsigned long long reads[2] = {0, 0};
    g.reads = reads;
    Out o;
    o.rec = out_rec;
    o.cap = out_cap;
    o.count = out_count;
    o.words = out_words;
    o.overflow = overflow;
    Walk w;
    w.g = &g;
    w.cands = cands;
    w.m = sm[wib];
    w.st = scratch + warp * (unsigned long long)(MAXN * S_STRIDE);
    w.keep = KEEP && keep ? keep + warp * keep_slots * (unsigned long long)keep_cap : 0;
    w.keep_cap = keep_cap;
    uint32_t seed_depth = seeds ? seed_words - 2 : 0;
    bool expanding = split > seed_depth;
    uint32_t* pk = park ? park + warp * PARK_WORDS : 0;
    // Only a launch's first unit can be a parked one: a warp that parks
    // stops, since the buffer is full.
    uint32_t parked = 0;
    if (pk && lane == 0)
        parked = pk[P_STATE];
    parked = __shfl_sync(0xFFFFFFFFu, parked, 0);

    for (;; parked = 0) {
        unsigned long long unit;
        int resume = DONE;
        uint32_t orient0 = 0;
        if (parked == 2) {
            // A seed parked in enumerate mode: its walk resumes below.
            unsigned long long i = pk[P_UNIT] | (unsigned long long)pk[P_UNIT + 1] << 32;
            resume = (int)pk[P_DEPTH];
            w.m[lane] = pk[P_M + lane];
            __syncwarp();
            if (lane == 0)
                pk[P_STATE] = 0;
            if (walk_seed<KEEP>(w, mode, o, lane, prog, term_off, nchanges, counts, seeds, seed_words, split, i, resume, pk))
                break;
            continue;
        } else if (parked) {
            unit = pk[P_UNIT] | (unsigned long long)pk[P_UNIT + 1] << 32;
            orient0 = pk[P_ORIENT];
            resume = (int)pk[P_DEPTH];
            w.m[lane] = pk[P_M + lane];
            __syncwarp();
            if (lane == 0)
                pk[P_STATE] = 0;
        } else {
            unsigned long long i = 0;
            if (lane == 0)
                i = ((mode == 1 || expanding) && *(volatile uint32_t*)overflow) ? total_units : atomicAdd(next_unit, 1ull);
            i = __shfl_sync(0xFFFFFFFFu, i, 0);
            if (i >= total_units)
                break;
            if (seeds) {
                if (walk_seed<KEEP>(w, mode, o, lane, prog, term_off, nchanges, counts, seeds, seed_words, split, i, DONE, pk))
                    break;
                continue;
            }
            unit = i;
        }
        uint32_t t = (uint32_t)(unit / nchanges), c = (uint32_t)(unit % nchanges);
        const uint32_t* p = prog + term_off[t];
        const uint32_t* ch = changes + 4ull * c;
        uint32_t src = ch[0], dst = ch[1], label = ch[2];
        w.prog = p;
        w.sign = ch[3] ? 1 : -1;
        // An expansion launch stops deep plans at level split and writes
        // the partial matches as seeds; shallow plans it finishes itself.
        // A seed of a plan one level deeper than split is one count of the
        // last level: worth a warp of its own when a hub's unit holds
        // millions of them.
        bool seeding = expanding && p[T_N] >= split + 1;
        uint32_t umode = seeding ? 1 : (expanding ? 0 : mode);
        w.n = seeding ? split : p[T_N];
        uint32_t elabel = p[T_ELABEL];
        if (elabel != WILDCARD && elabel != label)
            continue;
        unsigned long long cnt = 0;
        int stop = DONE;
        uint32_t orient = orient0;
        for (; orient < 2; orient++) {
            if (orient == 1 && !p[T_BOTH])
                break;
            if (resume != DONE) {
                stop = walk<KEEP>(w, umode, o, unit, lane, &cnt, 2, resume);
                resume = DONE;
            } else {
                uint32_t x = orient ? dst : src, y = orient ? src : dst;
                bool ok = true;
                if (lane == 0) {
                    w.m[0] = x;
                    w.m[1] = y;
                    const uint32_t* l0 = level(w, 0);
                    ok = (l0[L_LABEL] == WILDCARD || g.vlabel[x] == l0[L_LABEL]) && in_cands(w, l0, x);
                    ok = ok && admissible(w, 1, y);
                    if (ok && p[T_FLIP])
                        ok = flips_here(w, elabel, p[T_ANY], src, label, x, y);
                    const uint32_t* l1 = level(w, 1);
                    const uint32_t* cons = p + l1[L_CONS];
                    for (uint32_t k = 0; ok && k < l1[L_NCONS]; k++)
                        ok = check_cons(w, cons + k * C_WORDS, y);
                }
                ok = __shfl_sync(0xFFFFFFFFu, ok, 0);
                __syncwarp();
                if (!ok)
                    continue;
                stop = walk<KEEP>(w, umode, o, unit, lane, &cnt, 2, DONE);
            }
            if (stop != DONE)
                break;
        }
        // The matches written so far count, whether or not the unit parks:
        // the host keeps every record. A unit's count stays a word: walk
        // adds at most a list's length (under 2^33) a step, so it would
        // take 2^31 steps of one unit over lists of 2^32 entries to wrap
        // it. Into the query's 128-bit count it carries (add_count), which
        // fewer than 2^64 units of under 2^64 each cannot wrap.
        if (lane == 0 && cnt > 0 && !seeding) {
            uint32_t q = p[T_QUERY];
            add_count(counts + 4 * q + (w.sign > 0 ? 0 : 2), u128(cnt));
        }
        if (stop != DONE && pk) {
            pk[P_M + lane] = w.m[lane];
            if (lane == 0) {
                pk[P_UNIT] = (uint32_t)unit;
                pk[P_UNIT + 1] = (uint32_t)(unit >> 32);
                pk[P_ORIENT] = orient;
                pk[P_DEPTH] = (uint32_t)stop;
                pk[P_STATE] = 1;
            }
            __syncwarp();
            break;
        }
    }
    if (reads[0])
        atomicAdd(list_bytes, reads[0]);
    if (reads[1])
        atomicAdd(list_bytes + 1, reads[1]);
}

// The two kernels of match_units: extern "C" functions cannot be templates.
#define MATCH_PARAMS                                                                                               \
    const uint32_t *prog, const uint32_t *term_off, uint32_t nterms, const uint32_t *changes, uint32_t nchanges,  \
        const Graph *graph, unsigned long long *counts, uint32_t *scratch, unsigned long long *next_unit,         \
        unsigned long long total_units, uint32_t mode, uint32_t *out_rec, unsigned long long out_cap,            \
        unsigned long long *out_count, uint32_t out_words, uint32_t *park, uint32_t *overflow, uint32_t split,   \
        const uint32_t *seeds, uint32_t seed_words, unsigned long long *list_bytes, const uint32_t *cands,       \
        uint32_t *keep, uint32_t keep_cap, uint32_t keep_slots
#define MATCH_ARGS                                                                                                 \
    prog, term_off, nterms, changes, nchanges, graph, counts, scratch, next_unit, total_units, mode, out_rec,      \
        out_cap, out_count, out_words, park, overflow, split, seeds, seed_words, list_bytes, cands, keep, keep_cap, \
        keep_slots

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * WARP, 8) match_delta(MATCH_PARAMS)
{
    match_units<false>(MATCH_ARGS);
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * WARP, 8) match_keep(MATCH_PARAMS)
{
    match_units<true>(MATCH_ARGS);
}

// scatter copies staged list contents into the device mirror of the arenas
// (device placement). Each block takes one staged segment: dst word offset
// into the slab given by its header, length, and source offset in data.
extern "C" __global__ void scatter(const unsigned long long* dst_base, const uint32_t* hdr, uint32_t nseg, const uint32_t* data)
{
    for (uint32_t s = blockIdx.x; s < nseg; s += gridDim.x) {
        const uint32_t* h = hdr + 4ull * s; // slab, off, len, src
        uint32_t* dst = (uint32_t*)dst_base[h[0]] + h[1];
        const uint32_t* src = data + h[3];
        for (uint32_t i = threadIdx.x; i < h[2]; i += blockDim.x)
            dst[i] = src[i];
    }
}

#include "space.cu"
