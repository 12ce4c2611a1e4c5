/* The solver's per-state work in C: a run of turn-start states to their first rolls' values.
 *
 * The same numbers as the XLA chunk program (`solver/compiled.py`), bit for bit: every sum is
 * taken in the same order (`-ffp-contract=off`, no fast-math), a maximum is exact in any order,
 * and the values hold no NaN. The states are worked in tiles of TILE: a tile's widget, 462 keeps
 * by TILE states, stays in the core's first-level cache, where the XLA program streams [462, n]
 * arrays through the second level. Every index list is data from `solver/native.py`, so one
 * kernel serves every rule set. Compiled by `native.py` for the machine it runs on.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define TILE 8
#define NUM_DICE 5
#define NUM_FACES 6
#define NUM_ROLLS 252
#define NUM_KEEPS 462
#define MAX_BOXES 32
#define MAX_ROWS 64 /* zeros' rows: upper boxes + lower boxes + the -inf row */

/* A tile's values of one row: a vector the compiler maps onto the machine's registers. */
typedef double tile_t __attribute__((vector_size(TILE * sizeof(double))));
typedef int64_t tile_mask_t __attribute__((vector_size(TILE * sizeof(double))));

/* A rule set's constants and index lists (`native.py`'s `_Plan` builds them, in its order). */
typedef struct {
    int32_t num_upper, num_boxes, yahtzee_box, num_totals, cap;
    int32_t upper_bonus_points, yahtzee_score, yahtzee_bonus_points;
    /* Lists in compressed rows: list i is rows[starts[i]] .. rows[starts[i + 1] - 1]. */
    int32_t groups;
    const int32_t *group_starts, *group_rows; /* each group's zero options, rows of zeros */
    const int32_t *face_starts, *face_rows;   /* each roll's faces, rows of [box x count] */
    const int32_t *lower_starts, *lower_rows, *lower_points; /* each roll's lower boxes */
    const int32_t *group_of_roll;   /* [252] */
    const int32_t *five_of_roll;    /* [252]: the five-of-a-kind a roll is, -1 for others */
    const int32_t *add_by_face;     /* per size 0..4: [6, keeps of the size] into size + 1 */
    /* Each keep of sizes 1..5 in turn: its one-die-smaller keeps, rows of the size below. */
    const int32_t *remove_starts, *remove_rows;
    const int32_t *keep_offsets;    /* [7] */
    const int32_t *roll_order;      /* [252]: `WIDGET_POSITION[5]`, the output's order */
} plan_t;

/* Where `better`, b's lanes, else a's. */
static inline tile_t tile_pick(tile_mask_t better, tile_t a, tile_t b) {
    return (tile_t)(((tile_mask_t)b & better) | ((tile_mask_t)a & ~better));
}

/* (a > b ? a : b) lane by lane: the machine's maximum instruction is exactly that. */
#if defined(__AVX512F__) && TILE % 8 == 0
#define VECTOR __m512d
#define VECTOR_MAX _mm512_max_pd
#elif defined(__AVX__) && TILE % 4 == 0
#define VECTOR __m256d
#define VECTOR_MAX _mm256_max_pd
#elif defined(__SSE2__) && TILE % 2 == 0
#define VECTOR __m128d
#define VECTOR_MAX _mm_max_pd
#endif
static inline tile_t tile_max(tile_t a, tile_t b) {
#ifdef VECTOR
    enum { PARTS = sizeof(tile_t) / sizeof(VECTOR) };
    union { tile_t tile; VECTOR part[PARTS]; } x = {a}, y = {b};
    for (int i = 0; i < PARTS; i++) x.part[i] = VECTOR_MAX(x.part[i], y.part[i]);
    return x.tile;
#else
    return tile_pick(a > b, b, a);
#endif
}

/* `box_futures`, the zeros' rows and `five_of_a_kind_values` of a tile. The futures are
 * looked up lane by lane in loops the compiler turns into vector gathers; a filled box's own
 * index is the state's mask, always in the table, and its value is masked to -inf after. */
static void futures(const plan_t *p, const int32_t *mask, const int32_t *upper,
                    const int32_t *flag, const double *values,
                    const int8_t *yz_points, const uint8_t *yz_legal, const uint8_t *yz_bonus,
                    tile_t *by_count, tile_t *zeros, tile_t *five) {
    const int nu = p->num_upper, nb = p->num_boxes, yz = p->yahtzee_box;
    const int lower = nb - nu, cap = p->cap;
    const int64_t totals = p->num_totals;
    int64_t m[TILE], u[TILE], f[TILE];
    for (int w = 0; w < TILE; w++) m[w] = mask[w], u[w] = upper[w], f[w] = flag[w];
    /* The upper boxes: reward (the upper bonus included) and future by count of the face. */
    int64_t upper_reward[NUM_FACES * (NUM_DICE + 1)][TILE];
    tile_t upper_future[NUM_FACES * (NUM_DICE + 1)];
    for (int box = 0; box < nu; box++)
        for (int count = 0; count <= NUM_DICE; count++) {
            const int row = box * (NUM_DICE + 1) + count, points = (box + 1) * count;
            for (int w = 0; w < TILE; w++) {
                const int64_t next = u[w] + points < cap ? u[w] + points : cap;
                const int64_t reaches = u[w] < cap && next >= cap;
                const double later = values[((m[w] | 1 << box) * totals + next) * 2 + f[w]];
                upper_reward[row][w] = points + p->upper_bonus_points * reaches;
                upper_future[row][w] = (m[w] >> box) & 1 ? -INFINITY : later;
                by_count[row][w] = (double)upper_reward[row][w] + upper_future[row][w];
            }
        }
    for (int box = 0; box < nu; box++) zeros[box] = by_count[box * (NUM_DICE + 1)];
    for (int j = 0; j < lower; j++) {
        const int box = nu + j;
        for (int w = 0; w < TILE; w++) {
            const int64_t next_flag = box == yz ? 0 : f[w];
            const double later = values[((m[w] | 1 << box) * totals + u[w]) * 2 + next_flag];
            zeros[nu + j][w] = (m[w] >> box) & 1 ? -INFINITY : later;
        }
    }
    for (int w = 0; w < TILE; w++) zeros[nu + lower][w] = -INFINITY;
    const tile_t *lower_future = zeros + nu;
    for (int w = 0; w < TILE; w++) {
        const double fifty = (m[w] >> yz) & 1
                                 ? -INFINITY
                                 : values[((m[w] | 1 << yz) * totals + u[w]) * 2 + 1];
        const int64_t options = (m[w] * 2 + f[w]) * NUM_FACES;
        const uint32_t open = ~(uint32_t)m[w] & ((1u << nb) - 1);
        for (int face = 0; face < NUM_FACES; face++) {
            const int8_t *points = yz_points + (options + face) * nb;
            const uint8_t *legal = yz_legal + (options + face) * nb;
            const int64_t bonus = (int64_t)p->yahtzee_bonus_points * yz_bonus[options + face];
            /* A filled box is worth -inf (its future is), legal or not: only the open count. */
            double best = -INFINITY;
            for (uint32_t left = open; left; left &= left - 1) {
                const int box = __builtin_ctz(left);
                if (!legal[box]) continue;
                int64_t reward;
                double later;
                if (box < nu) {
                    const int row = box * (NUM_DICE + 1) + (face == box ? NUM_DICE : 0);
                    reward = upper_reward[row][w];
                    later = upper_future[row][w];
                } else if (box == yz) {
                    reward = points[box];
                    later = points[box] == p->yahtzee_score ? fifty : lower_future[box - nu][w];
                } else {
                    reward = points[box];
                    later = lower_future[box - nu][w];
                }
                const double value = (double)(reward + bonus) + later;
                best = value > best ? value : best;
            }
            five[face][w] = best;
        }
    }
}

/* `_final_values`: each roll's best box, [252] rows in `WIDGET_ORDER[5]`. */
static void final_values(const plan_t *p, const tile_t *by_count, const tile_t *zeros,
                         const tile_t *five, tile_t *groups, tile_t *rolls) {
    for (int g = 0; g < p->groups; g++) {
        tile_t best = zeros[p->group_rows[p->group_starts[g]]];
        for (int k = p->group_starts[g] + 1; k < p->group_starts[g + 1]; k++)
            best = tile_max(best, zeros[p->group_rows[k]]);
        groups[g] = best;
    }
    for (int r = 0; r < NUM_ROLLS; r++) {
        if (p->five_of_roll[r] >= 0) {
            rolls[r] = five[p->five_of_roll[r]];
            continue;
        }
        tile_t best = groups[p->group_of_roll[r]];
        for (int k = p->face_starts[r]; k < p->face_starts[r + 1]; k++)
            best = tile_max(best, by_count[p->face_rows[k]]);
        for (int k = p->lower_starts[r]; k < p->lower_starts[r + 1]; k++)
            best = tile_max(best, (double)p->lower_points[k] + zeros[p->num_upper + p->lower_rows[k]]);
        rolls[r] = best;
    }
}

/* `_keep_layers`: the keeps' values from the rolls' (the buffer's last 252 rows). */
static void average_keeps(const plan_t *p, tile_t *keeps) {
    const int32_t *offsets = p->keep_offsets, *add = p->add_by_face;
    for (int size = NUM_DICE - 1; size >= 0; size--) {
        const int count = offsets[size + 1] - offsets[size];
        tile_t *here = keeps + offsets[size];
        const tile_t *larger = keeps + offsets[size + 1];
        for (int i = 0; i < count; i++) {
            tile_t total = larger[add[i]];
            for (int face = 1; face < NUM_FACES; face++) total = total + larger[add[face * count + i]];
            here[i] = total / 6.0;
        }
        add += NUM_FACES * count;
    }
}

/* `_best_keep`: each keep the best of itself and its one-die-smaller keeps' bests, a size at
 * a time (the rolls' best keeps in the buffer's last 252 rows). */
static void best_keeps(const plan_t *p, tile_t *keeps) {
    const int32_t *offsets = p->keep_offsets, *starts = p->remove_starts, *remove = p->remove_rows;
    for (int size = 1; size <= NUM_DICE; size++) {
        tile_t *here = keeps + offsets[size];
        const tile_t *smaller = keeps + offsets[size - 1];
        const int count = offsets[size + 1] - offsets[size];
        for (int i = 0; i < count; i++) {
            tile_t best = here[i];
            for (int k = starts[i]; k < starts[i + 1]; k++) best = tile_max(best, smaller[remove[k]]);
            here[i] = best;
        }
        starts += count;
    }
}

/* `_keep_layers` then `_best_keep`: each roll's best keep (in the buffer's last 252 rows). */
static void reroll(const plan_t *p, tile_t *keeps) {
    average_keeps(p, keeps);
    best_keeps(p, keeps);
}

/* `widget.best_keep_choice` after `keep_values` of both: the keeps of highest value, the first
 * on a tie (a keep itself, then its one-die-smaller keeps in order), and their chances. */
static void reroll_choosing(const plan_t *p, tile_t *value, tile_t *chance) {
    average_keeps(p, value);
    average_keeps(p, chance);
    const int32_t *offsets = p->keep_offsets, *starts = p->remove_starts, *remove = p->remove_rows;
    for (int size = 1; size <= NUM_DICE; size++) {
        tile_t *here = value + offsets[size], *here_chance = chance + offsets[size];
        const tile_t *smaller = value + offsets[size - 1];
        const tile_t *smaller_chance = chance + offsets[size - 1];
        const int count = offsets[size + 1] - offsets[size];
        for (int i = 0; i < count; i++) {
            tile_t best = here[i], best_chance = here_chance[i];
            for (int k = starts[i]; k < starts[i + 1]; k++) {
                const tile_mask_t better = smaller[remove[k]] > best;
                best = tile_pick(better, best, smaller[remove[k]]);
                best_chance = tile_pick(better, best_chance, smaller_chance[remove[k]]);
            }
            here[i] = best, here_chance[i] = best_chance;
        }
        starts += count;
    }
}

/* The first rolls' values of `n` states (a multiple of TILE), in `ROLLS` order: out is
 * [n / chunk, 252, stride], a chunk's states the first `chunk` of a row (a stride of a whole
 * number of tiles more than the chunk spreads a tile's 252 rows over the cache's sets). */
/* Whether a run of `n` states and this plan fit the kernel's arrays (whole tiles, the card's
 * boxes and rows, six upper boxes, a group per roll at most). */
static int run_fits(const plan_t *p, int64_t n) {
    return n % TILE == 0 && p->num_boxes <= MAX_BOXES && p->num_boxes + 1 <= MAX_ROWS &&
           p->num_upper == NUM_FACES && p->groups <= NUM_ROLLS;
}

int solve_run(const plan_t *p, int64_t n, int64_t chunk, int64_t stride, const int32_t *mask,
              const int32_t *upper, const int32_t *flag, const double *values,
              const int8_t *yz_points, const uint8_t *yz_legal,
              const uint8_t *yz_bonus, double *out) {
    if (!run_fits(p, n) || chunk % TILE || stride < chunk || stride % TILE) return 1;
    tile_t by_count[NUM_FACES * (NUM_DICE + 1)], zeros[MAX_ROWS], five[NUM_FACES];
    tile_t groups[NUM_ROLLS], keeps[NUM_KEEPS];
    tile_t *rolls = keeps + p->keep_offsets[NUM_DICE];
    for (int64_t start = 0; start < n; start += TILE) {
        futures(p, mask + start, upper + start, flag + start, values, yz_points,
                yz_legal, yz_bonus, by_count, zeros, five);
        final_values(p, by_count, zeros, five, groups, rolls);
        reroll(p, keeps);
        reroll(p, keeps);
        double *block = out + (start / chunk) * NUM_ROLLS * stride + start % chunk;
        for (int r = 0; r < NUM_ROLLS; r++)
            memcpy(block + r * stride, &rolls[p->roll_order[r]], sizeof(tile_t));
    }
    return 0;
}

/* A row's entry at `wanted`, as `target_turn._shifted` reads it: its first entry below 0, 0 past
 * its end (a start below 0, a row no state has, reads from the table's first entry). */
static inline double row_entry(const double *flat, int64_t row, int64_t length, int64_t wanted) {
    const int64_t last = length > 1 ? length - 1 : 0;
    const int64_t index = wanted < 0 ? 0 : wanted > last ? last : wanted;
    return wanted < length ? flat[(row > 0 ? row : 0) + index] : 0.0;
}

#define MAX_CANDIDATES 1024 /* (box, points) pairs and five-of-a-kind moves a piece's rolls read */

/* The target tables' turn (`target_turn`'s `final_roll_chances`, the widget, `mean_over_rolls`):
 * the chances at the turn's start of `count` columns, column c that of reaching target[c] more
 * points from state[c] of the n, into out [m] (m: count rounded up to whole tiles, the last
 * column repeated). A roll's final chance is the largest of its `boxes` candidates' (0 if none
 * is above it): candidate k = sources[r * boxes + b] of state i reads the next state's row,
 * row[k, i] .. + length[k, i], at d - shift[k, i], as `target_turn._shifted` does (its first entry
 * where that is below 0; 0 past the row's end, as for a filled box, whose shift is set past
 * every target). Arrays of candidates are [candidates, n]. Given the candidates' expected
 * values (value, -inf where not allowed), the roll takes instead the chance of its candidate of
 * highest value (the first on a tie) and the keeps of highest value carry their chances: the
 * value-maximising player's. Given also `choose` rows (choose_row, choose_length [candidates, n]
 * into choose_flat), a candidate's value is value + its `choose` row's entry at d - shift, read
 * as the chances are (value 0 where allowed): a player choosing by one table of targets and
 * carrying another's chances. The mean over the first rolls is summed a roll at a time in
 * `ROLLS` order, a column's bits the same wherever it falls. Reads only the plan's widget lists. */
int target_run(const plan_t *p, int64_t n, int64_t count, const int64_t *state,
               const int64_t *target, int32_t boxes, int32_t candidates, const int32_t *sources,
               const int64_t *row, const int64_t *length, const int64_t *shift,
               const double *value, const double *flat, const int64_t *choose_row,
               const int64_t *choose_length, const double *choose_flat,
               const double *probabilities, int64_t m, double *out) {
    if (m % TILE || m < count || count < 1 || candidates > MAX_CANDIDATES || boxes > MAX_BOXES)
        return 1;
    for (int64_t c = 0; c < count; c++)
        if (state[c] < 0 || state[c] >= n) return 2;
    tile_t chance[MAX_CANDIDATES], keeps[NUM_KEEPS];
    tile_t worth[MAX_CANDIDATES], keeps_worth[NUM_KEEPS]; /* the values, given them */
    tile_t *rolls = keeps + p->keep_offsets[NUM_DICE];
    tile_t *rolls_worth = keeps_worth + p->keep_offsets[NUM_DICE];
    const tile_t none = {0};
    for (int64_t column = 0; column < m; column += TILE) {
        int64_t at[TILE], d[TILE];
        for (int w = 0; w < TILE; w++) {
            const int64_t c = column + w < count ? column + w : count - 1;
            at[w] = state[c], d[w] = target[c];
        }
        for (int k = 0; k < candidates; k++)
            for (int w = 0; w < TILE; w++) {
                const int64_t i = k * n + at[w];
                chance[k][w] = row_entry(flat, row[i], length[i], d[w] - shift[i]);
            }
        if (value) {
            for (int k = 0; k < candidates; k++)
                for (int w = 0; w < TILE; w++) {
                    const int64_t i = k * n + at[w];
                    worth[k][w] = value[i];
                    if (choose_flat)
                        worth[k][w] += row_entry(choose_flat, choose_row[i], choose_length[i],
                                                 d[w] - shift[i]);
                }
            for (int r = 0; r < NUM_ROLLS; r++) {
                tile_t best = none - INFINITY, best_chance = none;
                for (int b = 0; b < boxes; b++) {
                    const int k = sources[r * boxes + b];
                    const tile_mask_t better = worth[k] > best;
                    best = tile_pick(better, best, worth[k]);
                    best_chance = tile_pick(better, best_chance, chance[k]);
                }
                rolls_worth[r] = best, rolls[r] = best_chance;
            }
            reroll_choosing(p, keeps_worth, keeps);
            reroll_choosing(p, keeps_worth, keeps);
        } else {
            for (int r = 0; r < NUM_ROLLS; r++) {
                tile_t best = none;
                for (int b = 0; b < boxes; b++)
                    best = tile_max(best, chance[sources[r * boxes + b]]);
                rolls[r] = best;
            }
            reroll(p, keeps);
            reroll(p, keeps);
        }
        tile_t mean = none;
        for (int r = 0; r < NUM_ROLLS; r++)
            mean = mean + probabilities[r] * rolls[p->roll_order[r]];
        memcpy(out + column, &mean, sizeof(tile_t));
    }
    return 0;
}
