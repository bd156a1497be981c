package mirror

import "strings"

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
// from Redis's own.

// metaScript reads the meta hash.
var metaScript = newScript(`return redis.call('HGETALL', KEYS[1])`)

// shipScript applies a batch of changes if Redis's sequence is the one the
// batch follows. KEYS[1] is the meta hash, the others counter parts.
// ARGV: from, to, gen, then operations:
//
//	c <key index> <offset> <bytes>  write counter bytes
//	n <key index> <size>            a new, zeroed part
//	x <key index>                   delete a part (a retired sub-filter)
//	t <level> <tallies>             set a sub-filter's tallies
//	u <level>                       forget a retired sub-filter's tallies
//	d <directory>                   set the directory
//
// It answers OK, or DUP for a batch it already applied (a resend).
var shipScript = newScript(`
local meta = KEYS[1]
local gen = redis.call('HGET', meta, 'gen')
if not gen then return redis.error_reply('TBNOCOPY') end
if gen ~= ARGV[3] then return redis.error_reply('TBGEN ' .. gen) end
local seq = tonumber(redis.call('HGET', meta, 'seq'))
local from, to = tonumber(ARGV[1]), tonumber(ARGV[2])
if seq == to then return 'DUP' end
if seq ~= from then return redis.error_reply('TBSEQ ' .. tostring(seq)) end
local i = 4
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'c' then
    redis.call('SETRANGE', KEYS[tonumber(ARGV[i+1])], tonumber(ARGV[i+2]), ARGV[i+3])
    i = i + 4
  elseif op == 'n' then
    local key = KEYS[tonumber(ARGV[i+1])]
    redis.call('DEL', key)
    redis.call('SETRANGE', key, tonumber(ARGV[i+2]) - 1, '\0')
    i = i + 3
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
redis.call('HSET', meta, 'seq', to)
return 'OK'
`)

// writeScript writes bytes into a part of a copy not yet live, or the
// pending record. KEYS[1] is the key; ARGV: offset, bytes. At offset 0 the
// bytes replace the key's value, so nothing of an earlier value is left past
// their end.
var writeScript = newScript(`
if ARGV[1] == '0' then return redis.call('SET', KEYS[1], ARGV[2]) end
return redis.call('SETRANGE', KEYS[1], tonumber(ARGV[1]), ARGV[2])
`)

// pendingScript reads the pending record, or an empty string if there is
// none.
// KEYS[1] is the record.
var pendingScript = newScript(`return redis.call('GET', KEYS[1]) or ''`)

// discardScript deletes parts a pending record names, unless they are the
// live copy's, and with the last of them the record. KEYS[1] is the meta
// hash, KEYS[2] the record, the others the parts; ARGV: the record's
// generation, then 1 for the last parts.
var discardScript = newScript(`
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then
  for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
end
if ARGV[2] == '1' then redis.call('DEL', KEYS[2]) end
return 'OK'
`)

// switchScript makes a written copy live in one step, deleting the old
// one. KEYS[1] is the meta hash, the others the old copy's parts and the
// pending record. ARGV: format, gen, seq, config, part, dir, then tally
// field and value pairs.
var switchScript = newScript(`
local meta = KEYS[1]
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', meta)
redis.call('HSET', meta, 'format', ARGV[1], 'gen', ARGV[2], 'seq', ARGV[3], 'config', ARGV[4], 'part', ARGV[5], 'dir', ARGV[6])
for i = 7, #ARGV, 2 do redis.call('HSET', meta, ARGV[i], ARGV[i+1]) end
return 'OK'
`)

// readScript reads byte ranges of the live copy, if it is still the copy of
// generation ARGV[1]. KEYS[1] is the meta hash, the others parts; ARGV then
// holds (key index, first byte, last byte) triples.
var readScript = newScript(`
local gen = redis.call('HGET', KEYS[1], 'gen')
if gen ~= ARGV[1] then return redis.error_reply('TBGEN') end
local out = {}
for i = 2, #ARGV, 3 do
  out[#out + 1] = redis.call('GETRANGE', KEYS[tonumber(ARGV[i])], tonumber(ARGV[i+1]), tonumber(ARGV[i+2]))
end
return out
`)
