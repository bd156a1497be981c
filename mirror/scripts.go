package mirror

import (
	"fmt"
	"strings"
)

// scriptError is the TB code (and its argument) of an error a script
// raised, or "" for any other error. Redis may put "ERR " before it.
func scriptError(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.TrimPrefix(err.Error(), "ERR ")
	if strings.HasPrefix(msg, "TB") {
		return msg
	}
	return ""
}

// The scripts. Every key they touch is passed in KEYS, so they run on a
// cluster too; errors they raise start with TB so the mirror tells them
// from Redis's own. Every script that writes a copy first claims the name
// for its writer (claimLua), so that two writers of one name do not take
// turns replacing each other's copies.

// metaScript reads the meta hash, or the pending one.
var metaScript = newScript(`return redis.call('HGETALL', KEYS[1])`)

// applyOps is the Lua that applies a batch's operations, ARGV[first] on,
// to the copy whose meta (or pending) hash is meta:
//
//	c <key index> <n> <offset> <bytes> ...  write counter bytes, n times
//	n <key index>                           a new part, all zero
//	x <key index>                           delete a part (a retired sub-filter)
//	t <level> <tallies>                     set a sub-filter's tallies
//	u <level>                               forget a retired sub-filter's tallies
//	d <directory>                           set the directory
//
// then the key indexes of the parts the batch writes before it makes them,
// or never makes, and last how many of those there are.
//
// A new part is one zero byte, which reads as zero past its end, and the
// writer then fills each to its length with a call of its own
// (fillScript). Zeroing a new sub-filter's whole room here would hold
// Redis for as long as that takes, seconds for a sub-filter of gigabytes;
// a call now zeroes at most one part's room.
//
// Before it applies any operation it checks that each part the batch
// writes and does not make exists: a part that is gone (evicted, or
// deleted by hand) would otherwise come back as zeros and the bytes of
// the writes, silently losing every other counter in it. It raises TBPART
// and the part's name, and writes nothing. The writer names those parts
// (opArgs), so that the check costs a call a part and not a pass over the
// operations, which are most of a batch; an offset goes to SETRANGE as
// the string it came in, not through a Lua number; and writes into one
// part that follow each other are one operation, so that each costs
// Redis two arguments, not four. Where Redis shares two cores with the
// writer its time in Lua bounds shipping: on an AMD EPYC VM the first two
// took it from about 143 000 to 202 000 changes a second, and the third
// to 250 000 (medians of six interleaved runs).
//
// An operation it does not know raises TBOP where it stands; the writer
// builds both the script and the operations, so that is a bug in it, and
// the batch's sequence is not taken.
const applyOps = `
local last = #ARGV
local checks = tonumber(ARGV[last])
last = last - checks - 1
for j = last + 1, last + checks do
  local key = KEYS[tonumber(ARGV[j])]
  if redis.call('EXISTS', key) == 0 then return redis.error_reply('TBPART ' .. key) end
end
local i = first
while i <= last do
  local op = ARGV[i]
  if op == 'c' then
    local key, j = KEYS[tonumber(ARGV[i+1])], i + 3
    i = j + 2 * tonumber(ARGV[i+2])
    while j < i do
      redis.call('SETRANGE', key, ARGV[j], ARGV[j+1])
      j = j + 2
    end
  elseif op == 'n' then
    redis.call('SET', KEYS[tonumber(ARGV[i+1])], '\0')
    i = i + 2
  elseif op == 'x' then
    redis.call('DEL', KEYS[tonumber(ARGV[i+1])])
    i = i + 2
  elseif op == 't' then
    redis.call('HSET', meta, 't:' .. ARGV[i+1], ARGV[i+2])
    i = i + 3
  elseif op == 'u' then
    redis.call('HDEL', meta, 't:' .. ARGV[i+1])
    i = i + 2
  elseif op == 'd' then
    redis.call('HSET', meta, 'dir', ARGV[i+1])
    i = i + 2
  else
    return redis.error_reply('TBOP ' .. op)
  end
end
`

// shipScript applies a batch of changes if Redis's sequence is the one the
// batch follows. KEYS[1] is the meta hash, or the pending hash of a copy
// catching up before its switch, KEYS[2] the claim on the name; the others
// are counter parts, and the last the hold (keys.hold), or KEYS[1] again
// for a pending copy, which no reader holds. ARGV: from, to, gen, the
// writer's token and claim (see claimLua), the longest it waits for a
// hold in ms (see heldLua), then operations (see applyOps). It answers OK,
// DUP for a batch it already applied (a resend), or, applying nothing,
// HELD and the hold's time to live in ms while a reader holds the copy
// (see heldFor), or CUT once it cut a reader's hold.
var shipScript = newScript(claimLua(2, 4) + heldLua(6) + `
local meta = KEYS[1]
local gen = redis.call('HGET', meta, 'gen')
if not gen then return redis.error_reply('TBNOCOPY') end
if gen ~= ARGV[3] then return redis.error_reply('TBGEN ' .. gen) end
local seq = tonumber(redis.call('HGET', meta, 'seq'))
local from, to = tonumber(ARGV[1]), tonumber(ARGV[2])
if seq == to then return 'DUP' end
if seq ~= from then return redis.error_reply('TBSEQ ' .. tostring(seq)) end
local first = 7` + applyOps + `
redis.call('HSET', meta, 'seq', to)
return 'OK'
`)

// patchScript applies operations (see applyOps) to a copy not yet live,
// at no sequence: a full copy catching up writes the blocks changed while
// it was written, read again, before it takes the sequence of the moment
// it finishes. KEYS[1] is the pending hash, KEYS[2] the claim, the others
// counter parts; ARGV: the copy's generation, the writer's token and
// claim, then the operations. It raises TBPENDING if the pending copy is
// another's.
var patchScript = newScript(claimLua(2, 2) + `
local meta = KEYS[1]
if redis.call('HGET', meta, 'gen') ~= ARGV[1] then return redis.error_reply('TBPENDING') end
local first = 4` + applyOps + `
return 'OK'
`)

// fillScript grows a part applyOps made one byte long to its length,
// ARGV[2], with zeros, keeping what writes put in it, if the copy of hash
// KEYS[1] (the meta hash, or the pending one) is still of generation
// ARGV[1]. KEYS[2] is the part, KEYS[3] the claim; ARGV[3] and [4] the
// writer's token and claim. It answers OK, or GONE for a part the copy
// does not hold (a batch not applied); it raises TBGEN for another copy.
var fillScript = newScript(claimLua(3, 3) + `
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return redis.error_reply('TBGEN') end
if redis.call('EXISTS', KEYS[2]) == 0 then return 'GONE' end
local n = tonumber(ARGV[2])
if redis.call('STRLEN', KEYS[2]) < n then redis.call('SETRANGE', KEYS[2], n - 1, '\0') end
return 'OK'
`)

// writeScript writes bytes into a part of a copy not yet live, if the
// pending copy is still the one of its generation. KEYS[1] is the part,
// KEYS[2] the pending hash, KEYS[3] the claim; ARGV: the generation,
// offset, bytes, the writer's token and claim. At offset 0 the bytes
// replace the key's value, so nothing of an earlier value is left past
// their end. It raises TBPENDING if another copy replaced the pending one,
// or Redis lost it.
var writeScript = newScript(claimLua(3, 4) + `
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1] then return redis.error_reply('TBPENDING') end
if ARGV[2] == '0' then return redis.call('SET', KEYS[1], ARGV[3]) end
return redis.call('SETRANGE', KEYS[1], tonumber(ARGV[2]), ARGV[3])
`)

// startScript starts a copy: it takes a generation no copy had, above the
// live one, and writes the pending hash, shaped as the meta hash, naming
// the parts the copy will write before any is written. Two copies started
// at once so never write the same parts. KEYS[1] is the pending hash,
// KEYS[2] the last generation handed out, KEYS[3] the meta hash, KEYS[4]
// the claim; ARGV: the writer's token and claim, then the pending hash's
// fields and values but its generation. It answers the generation.
var startScript = newScript(claimLua(4, 1) + `
local gen = redis.call('INCR', KEYS[2])
local live = tonumber(redis.call('HGET', KEYS[3], 'gen') or '0') or 0
if gen <= live then
  gen = live + 1
  redis.call('SET', KEYS[2], gen)
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'gen', gen, unpack(ARGV, 3))
return gen
`)

// cloneScript copies a part of the live copy into a part of the pending
// one, inside Redis, if the live copy is still of generation ARGV[1] and
// the pending one of ARGV[2]. KEYS: the meta hash, the pending hash, the
// live part, the pending part, the claim; ARGV[3] and [4] the writer's
// token and claim. It raises TBGEN for another live copy, TBPENDING for
// another pending one, TBNOCOPY for a live part gone, and TBCOPY where
// Redis has no COPY (before 6.2).
var cloneScript = newScript(claimLua(5, 3) + `
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return redis.error_reply('TBGEN') end
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[2] then return redis.error_reply('TBPENDING') end
local copied = redis.pcall('COPY', KEYS[3], KEYS[4], 'REPLACE')
if type(copied) == 'table' and copied.err then return redis.error_reply('TBCOPY ' .. copied.err) end
if copied ~= 1 then return redis.error_reply('TBNOCOPY') end
return 'OK'
`)

// discardScript deletes parts of a copy that never became live, unless
// they are the live copy's, and with the last of them, if ARGV[2] is 1, the
// pending hash. KEYS[1] is the meta hash, KEYS[2] the pending one, the
// others the parts; ARGV: the copy's generation, then 1 for the last parts
// of the copy the pending hash names.
var discardScript = newScript(`
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then
  for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
end
if ARGV[2] == '1' then redis.call('DEL', KEYS[2]) end
return 'OK'
`)

// switchScript makes a written copy live in one step: it deletes the old
// copy and renames the pending hash to the meta hash, if the pending copy
// is still the one of generation ARGV[1] at sequence ARGV[2] (another
// process's copy may have replaced it). KEYS[1] is the meta hash, KEYS[2]
// the pending one, KEYS[3] the claim, the last the hold (keys.hold), the
// others the old copy's parts; ARGV[3] and [4] are the writer's token and
// claim, ARGV[5] the longest it waits for a hold in ms (see heldLua). It
// answers OK, or, changing nothing, HELD and the hold's time to live
// while a reader holds the live copy (see heldFor), or CUT once it cut a
// reader's hold.
var switchScript = newScript(claimLua(3, 3) + `
if redis.call('HGET', KEYS[2], 'gen') ~= ARGV[1] or redis.call('HGET', KEYS[2], 'seq') ~= ARGV[2] then
  return redis.error_reply('TBPENDING')
end` + heldLua(5) + `
for i = 4, #KEYS - 1 do redis.call('DEL', KEYS[i]) end
redis.call('RENAME', KEYS[2], KEYS[1])
return 'OK'
`)

// A hold (keys.hold) holds the time it began, in ms of Redis's clock, and
// the token of the reader that took it: "<ms> <token>". A writer that has
// waited for it as long as it waits for one (Options.MaxHold) cuts it: it
// puts "!" before it, for as long as it waits or the hold would have
// lasted, whichever is longer, and then it holds nobody.
// A reader whose hold was cut, or that finds one cut, takes none.
//
// nowLua sets now to Redis's clock in ms.
const nowLua = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`

// heldLua answers HELD and the hold's time to live in ms (-1 for none) if
// the last key, the hold, holds a reader, unless it is KEYS[1], the hash
// the script changes: a pending copy, which no reader holds. A hold that
// began ARGV[arg] ms ago or more it cuts instead, and answers CUT, having
// changed nothing else: the writer then makes its call again. A hold
// without a start (set by a reader built before holds had one, or by
// hand) is never cut; it expires.
func heldLua(arg int) string {
	return fmt.Sprintf(`
local hold = KEYS[#KEYS]
local held = hold ~= KEYS[1] and redis.call('GET', hold)
if held and string.sub(held, 1, 1) ~= '!' then
  local since = tonumber(string.match(held, '^(%%d+) '))`+nowLua+`
  if not since or now - since < tonumber(ARGV[%[1]d]) then return 'HELD ' .. redis.call('PTTL', hold) end
  redis.call('SET', hold, '!' .. held, 'PX', math.max(redis.call('PTTL', hold), tonumber(ARGV[%[1]d]), 1))
  return 'CUT'
end
`, arg)
}

// holdTTLScript answers as heldLua does whether KEYS[2], the hold, holds
// a reader, ARGV[1] being the longest the writer waits: HELD and its time
// to live in ms, OK, or CUT after cutting a hold as old as that. KEYS[1]
// is the meta hash.
var holdTTLScript = newScript(heldLua(1) + `
return 'OK'
`)

// holdScript asks the writer of the live copy to pause (see keys.hold), if
// that copy is still of generation ARGV[1]: it sets the hold, KEYS[2], to
// the reader's token ARGV[2] for ARGV[3] ms, taking over another reader's
// hold, which is as good, and keeping the time it began. KEYS[1] is the
// meta hash. It answers the copy's sequence, or raises TBGEN for another
// copy and TBCUT for a hold cut. A reader renews the hold as it reads; one
// that stops leaves it to expire.
var holdScript = newScript(`
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return redis.error_reply('TBGEN') end
local held = redis.call('GET', KEYS[2])
if held and string.sub(held, 1, 1) == '!' then return redis.error_reply('TBCUT') end
local since = held and string.match(held, '^(%d+) ')
if not since then` + nowLua + `
  since = string.format('%.0f', now)
end
redis.call('SET', KEYS[2], since .. ' ' .. ARGV[2], 'PX', ARGV[3])
return redis.call('HGET', KEYS[1], 'seq')
`)

// unholdScript ends a reader's hold, KEYS[1], if it is still the token
// ARGV[1]'s: a hold another reader took over is left to that reader, and
// a hold cut stays cut until it expires.
var unholdScript = newScript(`
local held = redis.call('GET', KEYS[1])
if held and string.match(held, '^%d+ (.*)$') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 'OK'
`)

// readScript reads byte ranges of the live copy, if it is still the copy
// whose meta hash the reader read: of generation ARGV[1], at sequence
// ARGV[2] unless that is empty, and of the directory whose SHA-1 is
// ARGV[3] unless that is empty. A read that spans calls (Pull, Restore)
// pins the sequence, so that the bytes it puts together are of one
// change; a checker, whose one call reads at one moment, pins the
// directory, by which it places keys, so that it never misses a
// sub-filter opened since it read it, or reads a retired one's room. Each
// raises TBGEN, TBSEQ or TBDIR. KEYS[1] is the meta hash, the others
// parts; ARGV then holds (key index, first byte, last byte) triples. A
// range past the end of a part not yet filled reads short (see applyOps);
// a range that reads short from a part that does not exist raises TBPART
// and its name, so that a copy Redis lost part of is never read as zeros.
var readScript = newScript(`
local meta = KEYS[1]
if redis.call('HGET', meta, 'gen') ~= ARGV[1] then return redis.error_reply('TBGEN') end
if ARGV[2] ~= '' and redis.call('HGET', meta, 'seq') ~= ARGV[2] then return redis.error_reply('TBSEQ') end
if ARGV[3] ~= '' and redis.sha1hex(redis.call('HGET', meta, 'dir') or '') ~= ARGV[3] then return redis.error_reply('TBDIR') end
local out = {}
for i = 4, #ARGV, 3 do
  local key, first, last = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i+1]), tonumber(ARGV[i+2])
  local b = redis.call('GETRANGE', key, first, last)
  if #b <= last - first and redis.call('EXISTS', key) == 0 then return redis.error_reply('TBPART ' .. key) end
  out[#out + 1] = b
end
return out
`)
