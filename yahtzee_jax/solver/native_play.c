/* Optimal solitaire play on the solver's kernel: whole games, a turn of every game at a time.
 *
 * The games of a turn are grouped by their turn-start state (`native_play.py`); the kernel's
 * widget of TILE distinct states is computed once (the same `futures`, `final_values` and keep
 * layers that solve the table, float64), and then every game of those states plays its turn
 * from it: the best keep with two re-rolls left, the best with one, the best box. Each game
 * rolls its own dice (splitmix64 from its seed), so a game's dice do not depend on the others
 * or on the number of threads. The policy is the optimal agent's (expected score, the first
 * of equal values), valued in float64 where the agent's widget is float32: they part only
 * where two choices are within float32's rounding of each other.
 */
#include "native_kernel.c"

/* A game's card and dice stream: 32 bytes, two games a cache line (a turn visits the games
 * of a state, scattered over the array: one line each, not one per field). */
typedef struct {
    uint64_t random;                /* its splitmix64 state */
    int32_t mask, upper, flag;      /* the card's state: filled boxes, capped upper total, 50 */
    int32_t total, yahtzee_bonuses;
    uint8_t upper_bonus;
} game_t;

/* Where each game's turn goes (`native_play.py`'s arrays). */
typedef struct {
    game_t *game;
    int16_t *turns_played;          /* [N, turns, 2]: each turn's box and the points written */
    int8_t *dice, *keeps;           /* NULL, or the play written out: [N, turns, 3, 5] the
                                     * dice of each roll, [N, turns, 2] each keep action */
    int32_t turns;
} games_t;

/* What a decision reads besides the widget. */
typedef struct {
    const double *values;           /* the value table [masks, totals, 2] */
    const int8_t *yz_points;        /* the five-of-a-kinds' options [masks, 2, 6, boxes] */
    const uint8_t *yz_legal, *yz_bonus;
    const int32_t *base_points;     /* [252, boxes]: every other roll's points, no Joker */
    const int32_t *action_rows;     /* [252, 32]: the widget row of each roll's keep action */
    const int32_t *roll_of_code;    /* [7776]: sorted dice's base-6 code -> roll (ROLLS order) */
    const int32_t *five_face;       /* [252]: the face of a five of a kind (0-5), else -1 */
    const int32_t *roll_counts;     /* [252, 6]: how many dice show each face */
} play_tables_t;

static inline uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A die 1-6: the high part of a 64-bit random number times 6 (a bias of 6 / 2^64). */
static inline int32_t roll_die(uint64_t *state) {
    return 1 + (int32_t)(((unsigned __int128)next_random(state) * NUM_FACES) >> 64);
}

/* Roll again the dice that `action` does not keep (bit i keeps sorted die i); sort them. */
static void roll_again(int32_t *dice, int action, uint64_t *state) {
    for (int i = 0; i < NUM_DICE; i++)
        if (!(action >> i & 1)) dice[i] = roll_die(state);
    for (int i = 1; i < NUM_DICE; i++)
        for (int j = i; j > 0 && dice[j - 1] > dice[j]; j--) {
            const int32_t swap = dice[j];
            dice[j] = dice[j - 1], dice[j - 1] = swap;
        }
}

static inline int roll_index(const int32_t *dice, const int32_t *roll_of_code) {
    int code = 0;
    for (int i = NUM_DICE - 1; i >= 0; i--) code = code * NUM_FACES + dice[i] - 1;
    return roll_of_code[code];
}

/* The keep action of highest value in lane w (the first of equal values). */
static int best_action(const tile_t *keeps, const int32_t *rows, int w) {
    int best = 0;
    double best_value = keeps[rows[0]][w];
    for (int action = 1; action < 32; action++) {
        const double value = keeps[rows[action]][w];
        if (value > best_value) best = action, best_value = value;
    }
    return best;
}

/* What scoring roll `r` in `box` does to a card of upper total u and flag f: the points written,
 * the reward (the upper bonus included where the box brings the total to it) and the next upper
 * total and flag. `options` is the card's row of the five-of-a-kinds' tables, `face` the roll's
 * five-of-a-kind face (-1 for the other rolls, which score their base points). */
typedef struct {
    int64_t points, reward, upper, flag;
} move_t;

static move_t box_move(const plan_t *p, const play_tables_t *t, int64_t options, int face, int r,
                       int64_t u, int64_t f, int box) {
    const int nb = p->num_boxes, cap = p->cap;
    const int64_t points =
        face < 0 ? t->base_points[(int64_t)r * nb + box] : t->yz_points[options * nb + box];
    move_t move = {points, points, u, f};
    if (box < p->num_upper) {
        move.upper = u + points < cap ? u + points : cap;
        move.reward += p->upper_bonus_points * (u < cap && move.upper >= cap);
    } else if (box == p->yahtzee_box) {
        move.flag = points == p->yahtzee_score;
    }
    return move;
}

/* Score roll `r` in its best box (the first of equal values) and move game g's card on. A roll
 * that is not five of a kind reads its boxes' values from the widget's own (lane w of
 * `by_count`, reward and future of each upper box by the count of its face, and `zeros`, the
 * future of each box); a five of a kind, whose boxes the Joker and bonus rules change, reads
 * the value table as `futures` does. */
static void score_best_box(const plan_t *p, const play_tables_t *t, games_t *g, int64_t game,
                           int r, int32_t turn, const tile_t *by_count, const tile_t *zeros,
                           int w) {
    const int nu = p->num_upper, nb = p->num_boxes;
    game_t *card = &g->game[game];
    const int64_t m = card->mask, u = card->upper, f = card->flag;
    const int face = t->five_face[r];
    const int64_t options = ((m * 2 + f) * NUM_FACES + (face < 0 ? 0 : face));
    const int64_t bonus = face < 0 ? 0 : (int64_t)p->yahtzee_bonus_points * t->yz_bonus[options];
    int best = -1;
    double best_value = -INFINITY;
    for (uint32_t open = ~(uint32_t)m & ((1u << nb) - 1); open; open &= open - 1) {
        const int box = __builtin_ctz(open);
        double value;
        if (face < 0) {
            const int count = box < nu ? t->roll_counts[r * NUM_FACES + box] : 0;
            value = box < nu ? by_count[box * (NUM_DICE + 1) + count][w]
                             : (double)t->base_points[(int64_t)r * nb + box] + zeros[box][w];
        } else {
            if (!t->yz_legal[options * nb + box]) continue;
            const move_t move = box_move(p, t, options, face, r, u, f, box);
            const int64_t next = ((m | 1 << box) * p->num_totals + move.upper) * 2 + move.flag;
            value = (double)(move.reward + bonus) + t->values[next];
        }
        if (value > best_value) best = box, best_value = value;
    }
    const move_t move = box_move(p, t, options, face, r, u, f, best);
    card->mask = (int32_t)(m | 1 << best);
    card->upper = (int32_t)move.upper, card->flag = (int32_t)move.flag;
    card->upper_bonus |= move.reward > move.points;
    card->total += (int32_t)(move.reward + bonus);
    card->yahtzee_bonuses += bonus > 0;
    int16_t *played = g->turns_played + (game * g->turns + turn) * 2;
    played[0] = (int16_t)best, played[1] = (int16_t)move.points;
}

/* Turn `turn` of the games of `n` distinct states (a multiple of TILE): state s's games are
 * games[starts[s]] .. games[starts[s + 1] - 1]. Returns 0, or 1 for a run it refuses. */
int play_run(const plan_t *p, int64_t n, const int32_t *mask, const int32_t *upper,
             const int32_t *flag, const int64_t *starts, const int64_t *games, int32_t turn,
             const play_tables_t *t, games_t *g) {
    if (!run_fits(p, n) || turn < 0 || turn >= g->turns) return 1;
    tile_t by_count[NUM_FACES * (NUM_DICE + 1)], zeros[MAX_ROWS], five[NUM_FACES];
    tile_t groups[NUM_ROLLS], keeps[NUM_KEEPS], last[NUM_KEEPS];
    tile_t *rolls = keeps + p->keep_offsets[NUM_DICE];
    for (int64_t start = 0; start < n; start += TILE) {
        futures(p, mask + start, upper + start, flag + start, t->values, t->yz_points,
                t->yz_legal, t->yz_bonus, by_count, zeros, five);
        final_values(p, by_count, zeros, five, groups, rolls);
        average_keeps(p, keeps);  /* the keeps' values with one re-roll left */
        memcpy(last, keeps, sizeof(last));
        best_keeps(p, keeps);
        average_keeps(p, keeps);  /* with two */
        for (int w = 0; w < TILE; w++)
            for (int64_t k = starts[start + w]; k < starts[start + w + 1]; k++) {
                const int64_t game = games[k], at = game * g->turns + turn;
                int32_t dice[NUM_DICE];
                int action = 0;
                for (int roll = 0; roll < 3; roll++) {
                    roll_again(dice, action, &g->game[game].random);
                    const int r = roll_index(dice, t->roll_of_code);
                    if (g->dice)
                        for (int i = 0; i < NUM_DICE; i++)
                            g->dice[(at * 3 + roll) * NUM_DICE + i] = (int8_t)dice[i];
                    if (roll == 2) {
                        score_best_box(p, t, g, game, r, turn, by_count, zeros, w);
                        break;
                    }
                    action = best_action(roll ? last : keeps, t->action_rows + r * 32, w);
                    if (g->keeps) g->keeps[at * 2 + roll] = (int8_t)action;
                }
            }
    }
    return 0;
}
