// The shared duplicate-execution drill (@retrysafe/testkit) on every msgraph operation: the real
// Graph SDK → the testkit fault proxy → the loopback Graph sandbox, on the runner's virtual clock.
// The setup lives in src/sandbox/msgraph-drills.ts; the CLI's `retrysafe drill` runs the same one.
import { runConformance } from '@retrysafe/testkit/conformance';
import { msGraphDrill } from '../src/sandbox/index.js';

runConformance(msGraphDrill);
