export {
  DRILL_CHANNEL,
  DRILL_HISTORY_DELAY_MS,
  DRILL_TOKEN,
  drillPostParams,
  drills,
  drillUpdateParams,
  type SlackDrill,
  slackDrill,
  slackDrillFaults,
} from './slack-drills.js';
export {
  type SandboxCall,
  type SandboxFault,
  type SandboxMessage,
  type SlackMethod,
  type SlackSandbox,
  type SlackSandboxOptions,
  startSlackSandbox,
} from './slack-sandbox.js';
