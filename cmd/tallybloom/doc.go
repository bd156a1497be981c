// Command tallybloom works with tallybloom filter files from the shell.
//
//	tallybloom create FILE --capacity N --error-rate P [--tightening R] [--growth G] [--seed S] [--fixed] [--counters-only]
//	tallybloom add    FILE [--id N | --with-ids] [--url] [-k] [KEY ...]
//	tallybloom remove FILE [--id N | --with-ids] [--url] [-k] [KEY ...]
//	tallybloom check  FILE [-q] [--json] [--url | --rollup] [-k] [KEY ...]
//	tallybloom dedupe FILE [--id N | --with-ids] [--url] [-k] [KEY ...]
//	tallybloom stats  FILE [--json]
//	tallybloom verify FILE
//	tallybloom drop-before FILE {ID | --older-than AGE}
//	tallybloom export FILE OUT [--frozen] [--base64]
//	tallybloom import IN FILE [--presence-bits | --counters-only]
//	tallybloom demo [DIR]
//	tallybloom mirror push FILE --redis URL --name NAME [--follow] [--cluster]
//	tallybloom mirror pull FILE --redis URL --name NAME [--cluster] [--presence-bits | --counters-only]
//	tallybloom mirror stats --redis URL --name NAME [--cluster] [--json]
//	tallybloom check --redis URL --name NAME [-q] [--json] [--url | --rollup] [-k] [KEY ...]
//	tallybloom --version
//
// Where --redis is left out, the Redis URL comes from the environment
// variable TALLYBLOOM_REDIS, which keeps a password off the command line.
//
// Exit codes: 0 when all is well, 1 when the answer is "no" (a key absent,
// a key to remove not found, a damaged file), 2 on an error (a missing file,
// bad flags, a file that is not a filter), with one clear line on standard
// error.
package main
