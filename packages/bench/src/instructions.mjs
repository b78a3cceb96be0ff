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
//   node src/instructions.mjs [--quick] [--where]
// `--where`: for each workload, the steady window's instructions by where they are spent (zlib, SQLite,
// JSON, hashing, libc, V8 builtins, JIT-compiled JS, compiler, GC) — from callgrind_annotate.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** Self (or, with `inclusive`, inclusive) instructions per function of a callgrind output file (callgrind_annotate, whole program). */
export function selfByFunction(file, { inclusive = false } = {}) {
  const text = execFileSync('callgrind_annotate', ['--threshold=100', `--inclusive=${inclusive ? 'yes' : 'no'}`, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const out = new Map();
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$/.exec(line);
    if (!m || m[2].includes('PROGRAM TOTALS')) continue;
    const n = Number(m[1].replaceAll(',', ''));
    if (Number.isFinite(n)) out.set(m[2], (out.get(m[2]) ?? 0) + n);
  }
  return out;
}

/** One callgrind run of `instr-run.mjs store mode n`: its total, and the output file kept for `where`. */
function callgrindRun(dir, store, mode, n, driver) {
  const out = join(dir, `cg.${store}.${mode}.${n}`);
  // Each run on a fresh database of its own.
  const db = mkdtempSync(join(dir, 'db-'));
  execFileSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, '--single-threaded', here('./instr-run.mjs'), store, mode, String(n), driver ?? ''], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, BENCH_DIR: db },
    maxBuffer: 64 * 1024 * 1024,
  });
  const total = Number(/^(?:summary|totals):\s+(\d+)/m.exec(execFileSync('grep', ['-m1', '-E', '^(summary|totals):', out], { encoding: 'utf8' }))?.[1]);
  if (!Number.isFinite(total)) throw new Error(`no instruction total in callgrind output for ${store}/${mode}`);
  return { total, file: out };
}

/** The steady window's instructions per op by category: (self(N2) - self(N1)) / (N2 - N1), per function, summed. */
function where(a, b, ops) {
  return splitByCategory(selfByFunction(a.file), selfByFunction(b.file), ops);
}

/**
 * Per category, (self after - self before) / ops summed over every function of either run. A function
 * of one run only counts too: JIT-compiled code has another address in each run (`???:0x…`), so the
 * shorter run's code is a function the longer run does not have (leaving it out added the shorter run's
 * JIT instructions to the window: the split summed to ~25k per op more than the total).
 */
export function splitByCategory(before, after, ops) {
  const sums = new Map();
  for (const fn of new Set([...before.keys(), ...after.keys()])) {
    const cat = categorize(fn);
    sums.set(cat, (sums.get(cat) ?? 0) + ((after.get(fn) ?? 0) - (before.get(fn) ?? 0)) / ops);
  }
  return Object.fromEntries([...sums].filter(([, v]) => Math.abs(v) >= 500).sort((x, y) => y[1] - x[1]).map(([k, v]) => [k, Math.round(v)]));
}

export async function runInstructions({ quick = false, modes = ['raw', 'hand', 'runner', 'powertools'], driver, windows, breakdown = false } = {}) {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed: `--part=instructions` needs it (apt-get install valgrind)');
  }
  const [n0, n1, n2] = windows ?? (quick ? [200, 800, 1600] : [1200, 3200, 6200]);
  if (!(n0 < n1 && n1 < n2)) throw new Error(`--windows needs three increasing run lengths, got ${[n0, n1, n2].join(',')}`);
  // The runner also on the memory ledger (no storage at all: its own code), and the baseline build's when asked (`before`).
  const cases = [...modes.map((mode) => ({ store: 'sqlite', mode })), ...modes.filter((m) => m === 'runner' || m === 'before').map((mode) => ({ store: 'memory', mode }))];
  const out = [];
  for (const c of cases) {
    const dir = mkdtempSync(join(tmpdir(), 'retrysafe-cg-'));
    try {
      const [a, b, d] = [n0, n1, n2].map((n) => callgrindRun(dir, c.store, c.mode, n, driver));
      out.push({
        ...c,
        windows: [n0, n1, n2],
        warmPerOp: (b.total - a.total) / (n1 - n0),
        perOp: (d.total - b.total) / (n2 - n1),
        ...(breakdown ? { where: where(b, d, n2 - n1) } : {}),
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
    console.log(`${`${r.store} ${r.mode}`.padEnd(20)} ${k(r.perOp).padStart(9)} ${k(r.warmPerOp).padStart(9)}`);
    if (r.where) {
      console.log(`${''.padEnd(20)}   ${Object.entries(r.where).map(([cat, v]) => `${cat} ${k(v)}`).join(' · ')}`);
      console.log(`${''.padEnd(20)}   without gc, compiler and start-up: ${k(withoutGcAndCompiler(r.where))} (compare builds on this)`);
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
  });
  printInstructions(rows);
  console.log(JSON.stringify(rows));
}
