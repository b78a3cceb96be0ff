// Instructions per operation under valgrind's callgrind: no timer noise, no other load. Each workload
// runs in a fresh `node` under callgrind twice, with N1 and N2 ops after the same warm-up; the
// difference of the two totals divided by N2 - N1 cancels start-up, module loading and warm-up.
//   node src/bench.mjs --part=instructions [--quick]      (also: node src/instructions.mjs)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (f) => fileURLToPath(new URL(f, import.meta.url));

/** Total instructions (Ir) of one callgrind run of `instr-run.mjs store mode n`. */
function callgrindTotal(store, mode, n, driver) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-cg-'));
  try {
    const out = join(dir, 'cg.out');
    execFileSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, here('./instr-run.mjs'), store, mode, String(n), driver ?? ''], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, BENCH_DIR: dir },
      maxBuffer: 64 * 1024 * 1024,
    });
    const text = readFileSync(out, 'utf8');
    const m = /^(?:summary|totals):\s+(\d+)/m.exec(text);
    if (!m) throw new Error(`no instruction total in callgrind output for ${store}/${mode}`);
    return Number(m[1]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runInstructions({ quick = false, modes = ['raw', 'hand', 'runner', 'powertools'], driver } = {}) {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed: `--part=instructions` needs it (apt-get install valgrind)');
  }
  const [n1, n2] = quick ? [100, 400] : [200, 1200];
  // The runner also on the memory ledger (no storage at all: its own code), and the baseline build's when asked (`before`).
  const cases = [...modes.map((mode) => ({ store: 'sqlite', mode })), ...modes.filter((m) => m === 'runner' || m === 'before').map((mode) => ({ store: 'memory', mode }))];
  const out = [];
  for (const c of cases) {
    const a = callgrindTotal(c.store, c.mode, n1, driver);
    const b = callgrindTotal(c.store, c.mode, n2, driver);
    out.push({ ...c, n1, n2, perOp: (b - a) / (n2 - n1) });
  }
  return out;
}

export function printInstructions(rows) {
  for (const r of rows) console.log(`${`${r.store} ${r.mode}`.padEnd(20)} ${Math.round(r.perOp / 1000).toLocaleString('en-US')}k instructions/op  (ops ${r.n2} − ${r.n1})`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = await runInstructions({ quick: process.argv.includes('--quick') });
  printInstructions(rows);
  console.log(JSON.stringify(rows));
}
