// Instructions per operation under valgrind's callgrind: no timer noise, no other load. Each workload
// runs in a fresh `node --single-threaded` under callgrind at three lengths (after the same 200-op
// warm-up); the difference of two totals divided by the difference of their lengths cancels start-up
// and module loading. Two windows are reported:
//   warm   N0 → N1: includes most of V8's optimising-compiler work (a short-lived process, a CLI call);
//   steady N1 → N2: the cost of one more operation in a process that has been running a while.
// `--single-threaded` keeps V8's compiler and GC on the main thread: the totals then repeat to ±0.1%
// between identical runs, where with background threads they varied by up to 2x (thread scheduling
// changes when optimised code arrives). All compile work is counted either way.
//
//   node src/bench.mjs --part=instructions [--quick] [--windows=1200,3200,6200] [--modes=runner,hand] [--where]
//   node src/instructions.mjs [--quick] [--where] [--lines=262144] [--stores=sqlite,postgres]
// `--lines=<bytes>`: also simulate a last-level cache of that size (callgrind --cache-sim) and print the lines
// per op it did not hold, code and data: an op's footprint, which decides what it costs when many processes
// share a cache (PostgreSQL with 8 workers on 2 cores). This VM has no counters for real misses.
// `--where`: for each workload, the steady window's instructions by where they are spent (zlib, SQLite,
// JSON, hashing, libc, V8 builtins, JIT-compiled JS, compiler, GC) — from callgrind_annotate.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { POSTGRES_ONLY } from './workloads.mjs';

const here = (f) => fileURLToPath(new URL(f, import.meta.url));

/** Where a native function's instructions count (first match wins). */
const CATEGORIES = [
  // V8 seeds its string hashes at isolate start-up with a prime test that takes a random number of rounds:
  // up to ~13M instructions apart between two runs, ±4k per op in a 3,000-op window. Start-up, not the op's.
  ['startup', /detail::sprp|HashSeed::/],
  ['sqlite', /better_sqlite3|libsqlite|sqlite3[A-Z_]/],
  ['zlib', /\b(deflate\w*|inflate\w*|_tr_\w+|build_tree|compress_block|pqdownheap|longest_match|send_tree|scan_tree|fill_window|adler32\w*|crc32\w*|gen_bitlen|gen_codes|bi_\w+)\b/],
  ['hashing', /sha256|SHA256|sha1_|EVP_|HMAC/],
  ['json', /Json(Stringifier|Parser)/],
  ['compiler', /compiler::|maglev::|baseline::|Sparkplug|interpreter::BytecodeGenerator|Parser::|Scanner::|Zone::/],
  // IterateObjectCache: the roots every scavenge visits; LiveObjectRange, RecordMigratedSlot: a mark-compact's moves.
  ['gc', /Mark(ing|Compact)|Sweep|Scaveng|Heap::|Evacuat|MinorMC|Concurrent(Marking)?|IterateObjectCache|LiveObjectRange|RecordMigratedSlot/],
  ['libc', /libc\.so|ld-linux/],
  ['builtins', /Builtins_/],
  ['jit', /^\?\?\?:0x[0-9a-f]+/],
];

export function categorize(name) {
  for (const [cat, re] of CATEGORIES) if (re.test(name)) return cat;
  return 'node/v8 runtime';
}

/**
 * Self (or, with `inclusive`, inclusive) counts per function of a callgrind output file (callgrind_annotate,
 * whole program): of `events` summed (default the instructions, Ir; with --cache-sim also e.g. ILmr, or
 * DLmr and DLmw together).
 */
export function selfByFunction(file, { inclusive = false, events = ['Ir'] } = {}) {
  const text = execFileSync('callgrind_annotate', ['--threshold=100', `--inclusive=${inclusive ? 'yes' : 'no'}`, `--show=${events.join(',')}`, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  return parseAnnotated(text);
}

/**
 * callgrind_annotate's per-function lines, `count (percent)` per shown event (`.` for none) then the
 * function: the counts summed, per function (a function listed twice adds up).
 */
export function parseAnnotated(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const m = /^\s*((?:(?:[\d,]+(?:\s+\(\s*[\d.]+%\))?|\.)\s+)+)(\S.*)$/.exec(line);
    if (!m || m[2].includes('PROGRAM TOTALS')) continue;
    const n = m[1].replace(/\([^)]*\)/g, ' ').trim().split(/\s+/).reduce((sum, c) => sum + (c === '.' ? 0 : Number(c.replaceAll(',', ''))), 0);
    if (Number.isFinite(n)) out.set(m[2], (out.get(m[2]) ?? 0) + n);
  }
  return out;
}

/**
 * A callgrind output's whole-program counts by event: its `events:` line names them (Ir alone, or with
 * `--cache-sim=yes` Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw), its `summary:` (or `totals:`) line counts them.
 */
export function eventTotals(text) {
  const names = /^events:\s+(.+)$/m.exec(text)?.[1].trim().split(/\s+/);
  const counts = /^(?:summary|totals):\s+(.+)$/m.exec(text)?.[1].trim().split(/\s+/).map(Number);
  if (!names || !counts) throw new Error('no events or summary line in callgrind output');
  return Object.fromEntries(names.map((name, i) => [name, counts[i] ?? 0]));
}

/**
 * Lines an op touches that a cache of the simulated size did not hold: last-level misses, instruction
 * and data (read and write). With a cache of about one op's worth, what a process finds of its share of a
 * shared cache after others ran, this counts the op's footprint in cache lines, code and data.
 */
export const lastLevelMisses = (t) => ({ code: t.ILmr ?? 0, data: (t.DLmr ?? 0) + (t.DLmw ?? 0) });

/**
 * One callgrind run of `instr-run.mjs store mode n`: its counts, and the output file kept for `where`.
 * `lines`: a last-level cache of that many bytes is simulated too (`--cache-sim=yes`: slower).
 */
function callgrindRun(dir, store, mode, n, driver, lines) {
  const out = join(dir, `cg.${store}.${mode}.${n}`);
  // Each run on a fresh database of its own.
  const db = mkdtempSync(join(dir, 'db-'));
  const sim = lines ? ['--cache-sim=yes', `--LL=${lines},16,64`] : [];
  execFileSync('valgrind', ['--tool=callgrind', ...sim, `--callgrind-out-file=${out}`, process.execPath, '--single-threaded', here('./instr-run.mjs'), store, mode, String(n), driver ?? ''], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, BENCH_DIR: db },
    maxBuffer: 64 * 1024 * 1024,
  });
  const totals = eventTotals(execFileSync('grep', ['-m2', '-E', '^(events|summary|totals):', out], { encoding: 'utf8' }));
  const total = totals.Ir;
  if (!Number.isFinite(total)) throw new Error(`no instruction total in callgrind output for ${store}/${mode}`);
  return { total, misses: lines ? lastLevelMisses(totals) : null, file: out };
}

/** The steady window's instructions per op by category: (self(N2) - self(N1)) / (N2 - N1), per function, summed. */
function where(a, b, ops) {
  return splitByCategory(selfByFunction(a.file), selfByFunction(b.file), ops);
}

/** With a simulated cache (`--lines`): the steady window's lines not held per op, code and data, by category. */
function whereLines(a, b, ops) {
  const by = (events) => splitByCategory(selfByFunction(a.file, { events }), selfByFunction(b.file, { events }), ops, 10);
  return { code: by(['ILmr']), data: by(['DLmr', 'DLmw']) };
}

/**
 * Per category, (self after - self before) / ops summed over every function of either run. A function
 * of one run only counts too: JIT-compiled code has another address in each run (`???:0x…`), so the
 * shorter run's code is a function the longer run does not have (leaving it out added the shorter run's
 * JIT instructions to the window: the split summed to ~25k per op more than the total).
 */
export function splitByCategory(before, after, ops, min = 500) {
  const sums = new Map();
  for (const fn of new Set([...before.keys(), ...after.keys()])) {
    const cat = categorize(fn);
    sums.set(cat, (sums.get(cat) ?? 0) + ((after.get(fn) ?? 0) - (before.get(fn) ?? 0)) / ops);
  }
  return Object.fromEntries([...sums].filter(([, v]) => Math.abs(v) >= min).sort((x, y) => y[1] - x[1]).map(([k, v]) => [k, Math.round(v)]));
}

export async function runInstructions({ quick = false, modes = ['raw', 'hand', 'runner', 'powertools'], stores = ['sqlite'], driver, windows, breakdown = false, lines } = {}) {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed: `--part=instructions` needs it (apt-get install valgrind)');
  }
  const [n0, n1, n2] = windows ?? (quick ? [200, 800, 1600] : [1200, 3200, 6200]);
  if (!(n0 < n1 && n1 < n2)) throw new Error(`--windows needs three increasing run lengths, got ${[n0, n1, n2].join(',')}`);
  // The runner also on the memory ledger (no storage at all: its own code), and the baseline build's when asked (`before`).
  if (lines !== undefined && !(Number.isInteger(lines) && lines >= 65536 && (lines & (lines - 1)) === 0)) throw new Error(`--lines needs a cache size in bytes, a power of two ≥ 65536, got ${lines}`);
  if (stores.includes('postgres') && !process.env.DATABASE_URL) throw new Error('--instr-stores=postgres needs DATABASE_URL');
  const cases = [...stores.flatMap((store) => modes.filter((mode) => store === 'postgres' || !POSTGRES_ONLY.has(mode)).map((mode) => ({ store, mode }))), ...modes.filter((m) => m === 'runner' || m === 'before').map((mode) => ({ store: 'memory', mode }))];
  const out = [];
  for (const c of cases) {
    const dir = mkdtempSync(join(tmpdir(), 'retrysafe-cg-'));
    try {
      const [a, b, d] = [n0, n1, n2].map((n) => callgrindRun(dir, c.store, c.mode, n, driver, lines));
      out.push({
        ...c,
        windows: [n0, n1, n2],
        warmPerOp: (b.total - a.total) / (n1 - n0),
        perOp: (d.total - b.total) / (n2 - n1),
        ...(lines ? { lines, missesPerOp: { code: (d.misses.code - b.misses.code) / (n2 - n1), data: (d.misses.data - b.misses.data) / (n2 - n1) } } : {}),
        ...(breakdown ? { where: where(b, d, n2 - n1) } : {}),
        ...(breakdown && lines ? { whereLines: whereLines(b, d, n2 - n1) } : {}),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

const k = (n) => `${Math.round(n / 1000).toLocaleString('en-US')}k`;

/**
 * The steady window's instructions without the garbage collector's, the optimising compiler's and
 * start-up's: a major collection or a late compile that falls in one run length and not the other moves
 * the total by 10–20k per op between builds whose code does the same work, and the start-up hash seed
 * by up to ±4k (see CATEGORIES), so compare builds on this figure.
 */
export function withoutGcAndCompiler(where) {
  return Object.entries(where).reduce((n, [cat, v]) => (cat === 'gc' || cat === 'compiler' || cat === 'startup' ? n : n + v), 0);
}

export function printInstructions(rows) {
  const [n0, n1, n2] = rows[0]?.windows ?? [];
  console.log(`${'workload'.padEnd(20)} ${'steady'.padStart(9)} ${'warm'.padStart(9)}   (instructions per op; steady = ops ${n1} → ${n2}, warm = ops ${n0} → ${n1}, after 200 warm-up ops)`);
  for (const r of rows) {
    const footprint = r.missesPerOp ? `   lines not in a ${r.lines / 1024} KB last-level cache, per op (steady): ${Math.round(r.missesPerOp.code + r.missesPerOp.data).toLocaleString('en-US')} (code ${Math.round(r.missesPerOp.code).toLocaleString('en-US')}, data ${Math.round(r.missesPerOp.data).toLocaleString('en-US')})` : '';
    console.log(`${`${r.store} ${r.mode}`.padEnd(20)} ${k(r.perOp).padStart(9)} ${k(r.warmPerOp).padStart(9)}${footprint}`);
    if (r.where) {
      console.log(`${''.padEnd(20)}   ${Object.entries(r.where).map(([cat, v]) => `${cat} ${k(v)}`).join(' · ')}`);
      console.log(`${''.padEnd(20)}   without gc, compiler and start-up: ${k(withoutGcAndCompiler(r.where))} (compare builds on this)`);
    }
    if (r.whereLines) {
      const lines = (split) => Object.entries(split).map(([cat, v]) => `${cat} ${v.toLocaleString('en-US')}`).join(' · ');
      console.log(`${''.padEnd(20)}   code lines not held, by where: ${lines(r.whereLines.code)}`);
      console.log(`${''.padEnd(20)}   data lines not held, by where: ${lines(r.whereLines.data)}`);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flag = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const rows = await runInstructions({
    quick: process.argv.includes('--quick'),
    breakdown: process.argv.includes('--where'),
    ...(flag('modes') ? { modes: flag('modes').split(',') } : {}),
    ...(flag('windows') ? { windows: flag('windows').split(',').map(Number) } : {}),
    ...(flag('lines') ? { lines: Number(flag('lines')) } : {}),
    ...(flag('stores') ? { stores: flag('stores').split(',') } : {}),
  });
  printInstructions(rows);
  console.log(JSON.stringify(rows));
}
