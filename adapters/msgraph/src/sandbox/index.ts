export { SANDBOX_SIGNED_IN_USER, type SandboxUser } from './msgraph-directory.js';
export {
  DRILL_TOKEN,
  drillEventParams,
  drillMailParams,
  drills,
  drillTaskParams,
  type MsGraphDrill,
  type MsGraphDrillOperation,
  msGraphDrill,
  msGraphDrillFaults,
} from './msgraph-drills.js';
export { graphRequestKind, startMsGraphSandbox } from './msgraph-sandbox.js';
export type * from './msgraph-sandbox-types.js';
