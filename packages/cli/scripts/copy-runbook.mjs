// Ships the operator's runbook inside the package: `retrysafe help runbook` prints it, and the
// handoff list points to that command rather than to a file of the repository.
import { copyFileSync, mkdirSync } from 'node:fs';

const from = new URL('../../../docs/runbook.md', import.meta.url);
const to = new URL('../dist/runbook.md', import.meta.url);
mkdirSync(new URL('.', to), { recursive: true });
copyFileSync(from, to);
