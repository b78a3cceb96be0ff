export { drills, slackDrill } from './slack-drills.js';
export {
  type SandboxCall,
  type SandboxFault,
  type SandboxIdentity,
  type SandboxMessage,
  type SlackMethod,
  type SlackSandbox,
  type SlackSandboxOptions,
  startSlackSandbox,
} from './slack-sandbox.js';
