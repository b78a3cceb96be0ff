import { runConformance } from '@retrysafe/testkit/conformance';
import { drills } from '../src/index.js';

// The shared drill (and the frame rules) on the sandbox adapter, over real loopback HTTP: SDK-less
// fetch → fault proxy → sandbox server. src/sandbox-drills.ts holds the setups; the CLI's
// `retrysafe drill --adapter sandbox` runs the same ones.
// - replaying: every scenario applies;
// - forgetful (stores nothing, no lookup): lost responses end in a handoff, never a blind re-send;
//   key-past-retention and in-progress do not apply and are reported as card-driven skips.
for (const drill of drills) runConformance(drill);
