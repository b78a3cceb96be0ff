import { runConformance } from '@retrysafe/testkit/conformance';
import { httpDrills } from '../src/sandbox/index.js';

// The shared drill for one operation of each pattern (IETF key, async request-reply, ETag, client
// token): axios → fault proxy → the pattern's loopback sandbox. src/sandbox/http-drills.ts holds the
// setups; the CLI's `retrysafe drill` runs the same ones.
for (const drill of httpDrills) runConformance(drill);
