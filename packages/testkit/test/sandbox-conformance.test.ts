import { join } from 'node:path';
import { drills } from '@retrysafe/sandbox';
import { runConformance } from '../src/conformance.js';
import { tempDir } from './fixtures/temp-dir.js';

// The shared drill (and the frame rules) on the sandbox adapter, over real loopback HTTP: SDK-less
// fetch → fault proxy → sandbox server. adapters/sandbox/src/sandbox-drills.ts holds the setups; the
// CLI's `retrysafe drill --adapter sandbox` runs the same ones. It lives here, not beside the adapter,
// so the sandbox adapter needs no testkit: core's tests use the sandbox, and the testkit depends on core.
// - replaying: every scenario applies;
// - forgetful (stores nothing, no lookup): lost responses end in a handoff, never a blind re-send;
//   key-past-retention and in-progress do not apply and are reported as card-driven skips.
const outDir = tempDir('retrysafe-drill-sandbox-');
for (const drill of drills.map((d) => ({ ...d, outDir: join(outDir, d.name) }))) runConformance(drill);
