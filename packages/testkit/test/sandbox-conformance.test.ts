// The sandbox adapter runs the whole drill over real loopback HTTP (SDK → fault proxy → sandbox server).
import { runConformance } from '../src/conformance.js';
import { forgetful, replaying, sandboxDrill } from './fixtures/sandbox-drill.js';

// A provider that replays stored results and can be looked up: every scenario applies.
runConformance(sandboxDrill('sandbox-replaying', replaying));

// A provider that stores nothing and has no lookup: lost responses must end in a handoff (never a
// blind resend); key-past-retention and in-progress do not apply and are reported as card-driven skips.
runConformance(sandboxDrill('sandbox-forgetful', forgetful));
