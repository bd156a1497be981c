package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

// FuzzExportChecker checks, for any bytes check may be given as an export,
// that it loads them or refuses them with one of the engine's sentinels,
// never both and never a panic, and that what it loads is an export with
// nothing after it: the same bytes with one more character are refused.
func FuzzExportChecker(f *testing.F) {
	filter, err := engine.Create(filepath.Join(f.TempDir(), "f.tb"), engine.Config{Capacity: 10, ErrorRate: 0.1, Fixed: true, Seed: 3}, nil)
	require.NoError(f, err)
	require.NoError(f, filter.AddString("key", 1))
	var export, frozen bytes.Buffer
	require.NoError(f, filter.Export(&export))
	require.NoError(f, filter.ExportFrozen(&frozen))
	require.NoError(f, filter.Close())
	wrapped := []byte(base64.StdEncoding.EncodeToString(export.Bytes()))
	for i := 76; i < len(wrapped); i += 77 {
		wrapped = append(wrapped[:i], append([]byte("\n"), wrapped[i:]...)...)
	}
	for _, seed := range [][]byte{
		export.Bytes(),
		frozen.Bytes(),
		[]byte(base64.RawURLEncoding.EncodeToString(export.Bytes()) + "\n"),
		[]byte(base64.RawURLEncoding.EncodeToString(frozen.Bytes())),
		wrapped,
	} {
		c, err := exportChecker("seed", seed)
		require.NoError(f, err)
		require.True(f, c.ContainsString("key"))
		f.Add(seed)
	}
	f.Add([]byte(engine.ExportMagic))
	f.Add([]byte("VEJFWFBPUlQ"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := exportChecker("in", data)
		if err != nil {
			require.Nil(t, c)
			requireRefused(t, err)
			return
		}
		require.NotNil(t, c)
		c.ContainsString("key")
		c, err = exportChecker("in", append(data[:len(data):len(data)], '!'))
		require.Nil(t, c, "a character after an export")
		requireRefused(t, err)
	})
}

// requireRefused requires err to be one of the sentinels of what is not a
// whole, readable export.
func requireRefused(t *testing.T, err error) {
	t.Helper()
	for _, sentinel := range []error{engine.ErrCorrupt, engine.ErrNotFilter, engine.ErrVersion} {
		if errors.Is(err, sentinel) {
			return
		}
	}
	t.Fatalf("not refused as an export: %v", err)
}

// What a stream holds is told by its first bytes, however few of them
// there are: a frozen export's magic needs its version byte after it.
func TestKindByFirstBytes(t *testing.T) {
	frozen := func(more ...byte) []byte { return append([]byte(engine.FrozenMagic), more...) }
	for _, c := range []struct {
		head []byte
		want string
	}{
		{[]byte(engine.Magic + "rest"), aFilterFile},
		{[]byte(engine.ExportMagic), anExport},
		{frozen(engine.FrozenVersion), aFrozenExport},
		{frozen(), ""},
		{frozen(engine.FrozenVersion + 1), ""},
		{[]byte(engine.Magic[:len(engine.Magic)-1]), ""},
		{nil, ""},
	} {
		require.Equal(t, c.want, kind(c.head), "%q", c.head)
	}
	// Nothing at all is not base64: it is no export in any form.
	require.False(t, looksBase64(nil))
	require.True(t, looksBase64([]byte("VEJF-_+/=\r\n")))
	require.False(t, looksBase64(frozen(engine.FrozenVersion)))
}

// decoded reads base64 of either alphabet, padded or not, broken into
// lines or spaced, as the bytes it encodes.
func TestDecodedTakesEitherAlphabet(t *testing.T) {
	raw := []byte{0xfb, 0xff, 0xbf, 0xfe, 0x00, 0x3e, 0xfc} // encodes with + and / (- and _)
	standard := base64.StdEncoding.EncodeToString(raw)
	require.Contains(t, standard, "+")
	require.Contains(t, standard, "/")
	require.Contains(t, standard, "=")
	spaced := standard[:3] + " \t" + standard[3:6] + "\n" + standard[6:]
	for _, in := range []string{standard, base64.RawURLEncoding.EncodeToString(raw), spaced} {
		got, err := io.ReadAll(decoded(strings.NewReader(in)))
		require.NoError(t, err, in)
		require.Equal(t, raw, got, in)
	}
}
