package main

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

// changeCommand is add or remove: they read keys and ids alike.
func changeCommand(verb string) *cobra.Command {
	var (
		id   uint64
		opts keyOptions
	)
	cmd := &cobra.Command{
		Use:   verb + " FILE [KEY ...]",
		Short: map[string]string{"add": "Add keys", "remove": "Remove keys added before, with their ids"}[verb],
		Long: `With no KEY arguments, keys are read from standard input, one a line
(blank lines are skipped), streaming. Every key gets --id (default: the
current Unix time in seconds), or, with --with-ids, the id before a tab:
ID<TAB>KEY. --url stores each key as a URL in canonical form (lowercased
host and path, without scheme, port, user, query or fragment), the form
check --rollup looks for.` + map[string]string{
			"add": "",
			"remove": `

Remove only keys that were added, with the id they were added with: removing
a key never added can remove other keys too (in any counting Bloom filter).
Exits 1 when some key was not found (nothing changed for it).`,
		}[verb],
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(cmd, errors.New("FILE is required"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("id") {
				id = uint64(time.Now().Unix())
			}
			return change(cmd, verb, args[0], args[1:], id, opts)
		},
	}
	cmd.Flags().Uint64Var(&id, "id", 0, "id of every key (default: now, in Unix seconds)")
	cmd.Flags().BoolVar(&opts.withIDs, "with-ids", false, "read ID<TAB>KEY lines")
	cmd.Flags().BoolVar(&opts.asURL, "url", false, "keys are URLs, stored in canonical form")
	cmd.MarkFlagsMutuallyExclusive("id", "with-ids")
	return cmd
}

func change(cmd *cobra.Command, verb, path string, keys []string, id uint64, opts keyOptions) error {
	f, err := engine.Open(path, nil)
	if err != nil {
		return err
	}
	in, size := cmd.InOrStdin(), int64(-1)
	if file, ok := in.(*os.File); ok && len(keys) == 0 {
		if info, err := file.Stat(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
	}
	p := newProgress(cmd.ErrOrStderr(), verb, size)
	adds := &adder{f: f, seen: map[string]struct{}{}}
	var notFound uint64
	err = eachKey(keys, p.reader(in), opts, func(k keyItem) error {
		if !opts.withIDs {
			k.id = id
		}
		p.keys++
		switch verb {
		case "add":
			return adds.add(k)
		case "remove":
			switch err := f.RemoveString(k.key, k.id); {
			case errors.Is(err, engine.ErrNotFound):
				notFound++
			case err != nil:
				return fmt.Errorf("line %d: %w", k.line, err)
			}
		}
		return nil
	})
	// The keys read before a bad line are added, as one at a time they
	// would have been; an add that fails among them came first.
	if addErr := adds.flush(); addErr != nil {
		err = addErr
	}
	closeErr := f.Close()
	if err != nil {
		return fmt.Errorf("%w (the keys before it were %sed and kept)", err, map[string]string{"add": "add", "remove": "remov"}[verb])
	}
	if closeErr != nil {
		return closeErr
	}
	if verb == "add" {
		p.summary("added %d keys (%d new)", p.keys, adds.fresh)
		return nil
	}
	p.summary("removed %d keys (%d not found)", p.keys-notFound, notFound)
	if notFound > 0 {
		return &exitCode{code: exitNo, err: fmt.Errorf("%d of %d keys not found; nothing changed for them", notFound, p.keys)}
	}
	return nil
}

// addGroup is how many keys add hands the engine at once.
const addGroup = 1024

// adder adds keys a group at a time, with ContainsBatch and AddBatch. It
// counts a key as new as adding one at a time would: absent before its
// group, and not earlier in its group. (One at a time, a key could also
// turn present by a false positive on the keys just before it in the same
// group; at a filter's error rate such keys are too few to count.)
type adder struct {
	f       *engine.Filter
	items   []keyItem
	keys    [][]byte
	ids     []uint64
	present []bool
	seen    map[string]struct{}
	fresh   uint64
}

func (a *adder) add(k keyItem) error {
	a.items = append(a.items, k)
	if len(a.items) == addGroup {
		return a.flush()
	}
	return nil
}

// flush adds the group. Whatever happens, the group is done with: after an
// error, its later keys are not added, as one at a time they would not be.
func (a *adder) flush() error {
	if len(a.items) == 0 {
		return nil
	}
	a.keys, a.ids = a.keys[:0], a.ids[:0]
	for _, k := range a.items {
		// The engine only reads the keys.
		a.keys = append(a.keys, unsafe.Slice(unsafe.StringData(k.key), len(k.key)))
		a.ids = append(a.ids, k.id)
	}
	a.present = a.f.ContainsBatch(a.keys, a.present)
	err := a.f.AddBatch(a.keys, a.ids)
	added := len(a.items)
	if batchErr, ok := errors.AsType[*engine.BatchError](err); ok {
		added = batchErr.Index
		err = fmt.Errorf("line %d: %w", a.items[batchErr.Index].line, batchErr.Err)
	}
	clear(a.seen)
	for i, k := range a.items[:added] {
		if _, again := a.seen[k.key]; !a.present[i] && !again {
			a.fresh++
		}
		a.seen[k.key] = struct{}{}
	}
	a.items = a.items[:0]
	return err
}
