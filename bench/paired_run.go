package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// pairedSide is one daemon under the paired rounds: its workspace, the
// task its agents are on, and the next subtask to finish.
type pairedSide struct {
	serve  []string
	rig    *rig
	agents []*agent
	task   string
	tasks  int
	next   int
}

// ready makes sure the side's task has need more subtasks for its agents:
// when it has not, a new task of size subtasks and n new agents on it are
// prepared (off the clock).
func (s *pairedSide) ready(ctx context.Context, agentCmd []string, n, size, need int) error {
	if s.agents != nil && s.next+need-1 <= size {
		return nil
	}
	closeAll(s.agents)
	s.agents = nil
	s.tasks++
	s.task = fmt.Sprintf("paired_%d", s.tasks)
	if err := s.rig.prepare(ctx, s.task, size); err != nil {
		return err
	}
	as, err := s.rig.startAgents(goAgents(Options{AgentCmd: agentCmd}), s.task, n)
	if err != nil {
		return err
	}
	s.agents, s.next = as, 1
	return nil
}

// round runs one round of row, with floor samples from fl.
func (s *pairedSide) round(ctx context.Context, row int, agentCmd []string, fl sampler) (round, error) {
	if row == RowSingle {
		return s.roundSingle(ctx, agentCmd, fl)
	}
	return s.roundAtOnce(ctx, agentCmd, fl)
}

// roundAtOnce runs a round of RowAtOnce: every agent finishes one
// subtask at the same moment; floor samples follow it.
func (s *pairedSide) roundAtOnce(ctx context.Context, agentCmd []string, fl sampler) (round, error) {
	if err := s.ready(ctx, agentCmd, pairedAgents, pairedAgents*pairedRoundsPerTask, pairedAgents); err != nil {
		return round{}, err
	}
	subs := make([][]string, pairedAgents)
	for i := range subs {
		subs[i] = []string{fmt.Sprintf("st_%d", s.next)}
		s.next++
	}
	lat, span, err := burst(s.rig.cm, s.task, s.agents, subs)
	if err != nil {
		return round{}, err
	}
	floors, err := fl.sample(pairedFloorSamples)
	return round{span: span, lat: lat, figure: ms(span), floors: floors}, err
}

// roundSingle runs a round of RowSingle: one agent drops
// pairedSingleMarkers markers, one at a time, each once the state showed
// the one before and followed by a floor sample, off the clock.
func (s *pairedSide) roundSingle(ctx context.Context, agentCmd []string, fl sampler) (round, error) {
	if err := s.ready(ctx, agentCmd, 1, pairedSingleTask, pairedSingleMarkers); err != nil {
		return round{}, err
	}
	var r round
	figures := make([]float64, 0, pairedSingleMarkers)
	for range pairedSingleMarkers {
		lat, wait, err := s.rig.one(s.agents[0], s.task, fmt.Sprintf("st_%d", s.next))
		if err != nil {
			return round{}, err
		}
		s.next++
		r.lat, r.span, figures = append(r.lat, lat), r.span+wait, append(figures, ms(lat))
		fls, err := fl.sample(1)
		if err != nil {
			return round{}, err
		}
		r.floors = append(r.floors, fls...)
	}
	r.figure = median(figures)
	return r, nil
}

func (s *pairedSide) close() {
	closeAll(s.agents)
	if s.rig != nil {
		s.rig.close()
	}
}

// pairedPlace is where the two daemons of RunPaired serve: a directory
// or a database, the floor measured there, and how a daemon's rig is made.
type pairedPlace struct {
	fl     sampler
	newRig func(ctx context.Context, i int, serve []string) (*rig, error)
	close  func()
}

// closingSampler is a floor with something to close.
type closingSampler interface {
	sampler
	close()
}

// dirPlace makes a temporary directory named prefix… in opt.Dir, the
// floor's (newFloor of it) and each daemon's workspace (rigAt daemon i)
// beside each other in it, removed at close.
func dirPlace(opt PairedOptions, rep *PairedReport, prefix string, newFloor func(base string) (closingSampler, error),
	rigAt func(ctx context.Context, base string, i int, serve []string) (*rig, error)) (*pairedPlace, error) {
	base, err := os.MkdirTemp(opt.Dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("bench: make a temporary directory in %s: %w", opt.Dir, err)
	}
	rep.Dir, rep.FS = base, describeFS(base)
	fl, err := newFloor(base)
	if err != nil {
		os.RemoveAll(base)
		return nil, err
	}
	return &pairedPlace{
		fl: fl,
		newRig: func(ctx context.Context, i int, serve []string) (*rig, error) {
			return rigAt(ctx, base, i, serve)
		},
		close: func() {
			fl.close()
			os.RemoveAll(base)
		},
	}, nil
}

// filesPlace: each daemon serves a workspace of its own in a temporary
// directory, beside the floor's directory.
func filesPlace(opt PairedOptions, rep *PairedReport) (*pairedPlace, error) {
	return dirPlace(opt, rep, ".workspaced-bench-",
		func(base string) (closingSampler, error) { return newFloorer(filepath.Join(base, "floor")) },
		func(ctx context.Context, base string, i int, serve []string) (*rig, error) {
			return newRig(ctx, filepath.Join(base, string(rune('a'+i))), serve)
		})
}

// pgPlace makes a temporary schema of opt.Postgres's database for the
// floor's table; each daemon then serves a temporary schema of its own,
// so that each holds its own lease and both lead at once.
func pgPlace(ctx context.Context, opt PairedOptions, rep *PairedReport) (*pairedPlace, error) {
	root, err := withSchema(opt.Postgres, tempSchema())
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	floor, err := newPGRig(ctx, root)
	if err != nil {
		return nil, err
	}
	var fl *pgFloorer
	if err = floor.s.Pool().QueryRow(ctx, "SELECT version()").Scan(&rep.Server); err == nil {
		fl, err = newPGFloorer(ctx, floor.s)
	}
	if err != nil {
		floor.close()
		return nil, err
	}
	return &pairedPlace{
		fl: fl,
		newRig: func(ctx context.Context, _ int, serve []string) (*rig, error) {
			r, err := newServedPGRig(ctx, opt.Postgres, serve)
			if err == nil {
				rep.Schemas = append(rep.Schemas, r.pg.s.Schema())
			}
			return r, err
		},
		close: floor.close,
	}, nil
}

// sqlitePlace: each daemon serves a database of its own in a temporary
// directory, beside the floor's database.
func sqlitePlace(opt PairedOptions, rep *PairedReport) (*pairedPlace, error) {
	return dirPlace(opt, rep, ".workspaced-bench-sqlite-",
		func(base string) (closingSampler, error) { return newSQLiteFloorer(filepath.Join(base, "floor.db")) },
		func(ctx context.Context, base string, i int, serve []string) (*rig, error) {
			return newServedSQLiteRig(ctx, filepath.Join(base, string(rune('a'+i))+".db"), serve)
		})
}

// newServedPGRig makes a workspace in a new temporary schema of base's
// database, listens for its state writes and starts serveCmd on it.
// Closing the rig stops the daemon and drops the schema.
func newServedPGRig(ctx context.Context, base string, serveCmd []string, serveArgs ...string) (*rig, error) {
	root, err := withSchema(base, tempSchema())
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	pr, err := newPGRig(ctx, root)
	if err != nil {
		return nil, err
	}
	r := &rig{dir: root, st: pr.s, cm: newCommits(), pg: pr}
	if err := pr.watch(ctx, r.cm); err != nil {
		pr.close()
		return nil, err
	}
	// Retention off, as on files.
	if r.srv, err = startServer(ctx, serveCmd, root, r.cm.abort, append([]string{"--cleanup-interval", "0"}, serveArgs...)...); err != nil {
		pr.close()
		return nil, err
	}
	return r, nil
}

// RunPaired runs one row (PairedOptions.Row) against two daemons in the
// same filesystem, or the same database, each serving its own workspace
// (its own schema) and both running the whole time: pair after pair, one
// round on each, A first in even pairs and B first in odd ones, so that
// neither gains from going first or from the disk's drift. The agents are
// the same Go agent processes for both; only the daemon differs. One
// round on each before the pairs warms them up and is not counted. The
// floor is sampled within or after every round. The temporary workspaces
// (schemas) are removed (dropped) afterwards, also after an error.
func RunPaired(ctx context.Context, opt PairedOptions) (rep *PairedReport, err error) {
	defer interrupted(ctx, &err)
	if opt.Pairs <= 0 {
		opt.Pairs = DefaultPairs
	}
	if opt.Row == 0 {
		opt.Row = RowAtOnce
	}
	if opt.Row != RowAtOnce && opt.Row != RowSingle {
		return nil, fmt.Errorf("bench: no paired row %d (%d or %d)", opt.Row, RowAtOnce, RowSingle)
	}
	say := func(format string, args ...any) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, format+"\n", args...)
		}
	}
	rep = &PairedReport{Row: opt.Row, Agents: pairedAgents, PerRound: pairedAgents}
	if opt.Row == RowSingle {
		rep.Agents, rep.PerRound = 1, pairedSingleMarkers
	}
	var place *pairedPlace
	switch {
	case opt.Postgres != "":
		place, err = pgPlace(ctx, opt, rep)
	case opt.SQLite:
		place, err = sqlitePlace(opt, rep)
	default:
		place, err = filesPlace(opt, rep)
	}
	if err != nil {
		return nil, err
	}
	defer place.close()
	sides := [2]*pairedSide{{serve: opt.ServeA}, {serve: opt.ServeB}}
	for i, s := range sides {
		say("start daemon %c: %s serve", 'A'+i, s.serve[0])
		if s.rig, err = place.newRig(ctx, i, s.serve); err != nil {
			return nil, err
		}
		defer s.close()
	}
	rounds, floors, err := runPairs(ctx, opt, sides, place.fl, say)
	if err != nil {
		return nil, err
	}
	rep.Floor = summarize("floor: temp write + fsync + rename + dir fsync (1 KiB), between rounds", floors, 0)
	if opt.Postgres != "" || opt.SQLite {
		rep.Floor.Name = "floor: INSERT … ON CONFLICT DO UPDATE of 1 KiB, own transaction, between rounds"
	}
	rep.Floor.VsFloor = 1
	rep.compare(opt.ServeA[0], opt.ServeB[0], rounds[0], rounds[1])
	return rep, nil
}

// runPairs runs a warm-up round on each side, then opt.Pairs pairs of
// rounds in alternating order, and returns each side's rounds and every
// floor sample.
func runPairs(ctx context.Context, opt PairedOptions, sides [2]*pairedSide, fl sampler, say func(string, ...any)) ([2][]round, []time.Duration, error) {
	var (
		rounds [2][]round
		floors []time.Duration
	)
	for _, s := range sides { // warm-up
		if _, err := s.round(ctx, opt.Row, opt.AgentCmd, fl); err != nil {
			return rounds, nil, err
		}
	}
	for p := range opt.Pairs {
		order := [2]int{0, 1}
		if p%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return rounds, nil, err
			}
			r, err := sides[i].round(ctx, opt.Row, opt.AgentCmd, fl)
			if err != nil {
				return rounds, nil, err
			}
			rounds[i] = append(rounds[i], r)
			floors = append(floors, r.floors...)
		}
		if (p+1)%10 == 0 || p+1 == opt.Pairs {
			say("paired rounds: %d of %d pairs", p+1, opt.Pairs)
		}
	}
	return rounds, floors, nil
}
