export { startSlackSandbox, type SandboxCall, type SandboxFault, type SandboxMessage, type SlackMethod, type SlackSandbox, type SlackSandboxOptions } from './slack-sandbox.js';
export { slackDrill, drills, slackDrillFaults, DRILL_TOKEN, DRILL_CHANNEL, DRILL_HISTORY_DELAY_MS, drillPostParams, drillUpdateParams, type SlackDrill } from './slack-drills.js';
