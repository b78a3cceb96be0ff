// Ships the files tsc does not emit: the operator's runbook (`retrysafe help runbook` prints it, and the
// handoff list points to that command rather than to a file of the repository) and the drill report's CSS.
import { copyFileSync, mkdirSync } from 'node:fs';

for (const [from, to] of [
  ['../../../docs/runbook.md', '../dist/runbook.md'],
  ['../src/report/report.css', '../dist/report/report.css'],
]) {
  mkdirSync(new URL('.', new URL(to, import.meta.url)), { recursive: true });
  copyFileSync(new URL(from, import.meta.url), new URL(to, import.meta.url));
}
