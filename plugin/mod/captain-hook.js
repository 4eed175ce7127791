// captain-hook's hooks module: Claude Code (2.1.332 and later, where plugins may ship one) runs
// it inside its own process, so an event costs no process: each classic event is posted to the
// per-user host over its HTTP Unix socket and the host's answer is returned as Claude Code's
// own result. Plain ES with no imports: Claude Code reads this source to list what it hooks.
//
// The command hooks in hooks.json stay registered. They answer whenever this module does not:
// an older Claude Code, mods turned off by policy, an event other settings hooks also handle
// (answering here would end the chain above them), or an answer holding what a module cannot
// say (a systemMessage, PreToolUse's defer): then this module calls next(e) and our command
// hook gets that same answer from the host, which kept it, so no hook runs twice.

// Where a guarded call goes when the host cannot answer: refused, with the reason.
const GUARDS = {
  PreToolUse: (why) => ({ deny: why }),
  PermissionRequest: (why) => ({ decision: { behavior: 'deny', message: why } }),
  PreSkillShellCommand: (why) => ({ block: why }),
}

// The exit code of `bin/hook mod-init` when no client is installed (the plugin's sh stand-in):
// the command hooks then answer everything, as without a module.
const NO_CLIENT = 3

// The session fields classic.PreToolUse's envelope lacks, as the last other event carried them.
const base = {}
const BASE_FIELDS = ['session_id', 'transcript_path', 'cwd', 'permission_mode']

// Once per load: the host's socket and the environment a command hook would send.
let started
// Once per load: the events some settings file also hooks.
let shared

function start($) {
  if (started === undefined) {
    started = (async () => {
      const env = await $.process.hookEnv()
      const hook = `${env.CLAUDE_PLUGIN_ROOT}/bin/hook`
      const ran = await $.process.run([hook, 'mod-init'], { env, timeoutMs: 20000 })
      if (ran.exitCode === NO_CLIENT) return { off: true }
      if (ran.exitCode !== 0) {
        throw new Error(`bin/hook mod-init exited ${ran.exitCode}: ${ran.stderr.trim()}`)
      }
      const init = JSON.parse(ran.stdout)
      return { off: false, socket: init.socket, env: init.env }
    })()
    // A start that failed is tried again by the next event.
    started.catch(() => {
      started = undefined
    })
  }
  return started
}

function sharedWithSettings($, event) {
  if (shared === undefined) {
    shared = $.settings.read({ key: 'hooks' }).then(
      (hooks) => new Set(Object.keys(hooks ?? {})),
      () => new Set(),
    )
  }
  return shared.then((events) => events.has(event))
}

async function post($, host, event, e) {
  const body = { event, input: e, env: host.env }
  if (event === 'PreToolUse') {
    if (base.session_id === undefined) base.session_id = await $.session.id()
    if (base.cwd === undefined) base.cwd = await $.session.cwd()
    body.base = base
  }
  return $.http.fetch('http://captain-hook/v1/event', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    socketPath: host.socket,
  })
}

// The host's answer; a host that went away is started again once.
async function ask($, event, e) {
  let host = await start($)
  if (host.off) return { pass: true }
  let res
  try {
    res = await post($, host, event, e)
  } catch (first) {
    started = undefined
    host = await start($)
    if (host.off) return { pass: true }
    res = await post($, host, event, e)
  }
  if (!res.ok) throw new Error(`the host answered ${res.status}: ${res.text}`)
  return JSON.parse(res.text)
}

export const register = (on) => {
  on('classic.*', async ($, e, next) => {
    const event = next.event.slice('classic.'.length)
    if (event !== 'PreToolUse') {
      for (const k of BASE_FIELDS) if (typeof e[k] === 'string') base[k] = e[k]
    }
    if (await sharedWithSettings($, event)) return next(e)
    const reply = await ask($, event, e)
    return reply.pass ? next(e) : reply.result
  }).catch(($, e, next) => {
    if (next.called) return next(e)
    const guard = GUARDS[next.event.slice('classic.'.length)]
    const why = `captain-hook could not check this call: ${next.error?.message ?? next.error?.kind}`
    // Any other event is skipped, as when its command hook fails: our command hook runs.
    return guard === undefined ? undefined : guard(why)
  })
}
