// The chapter page's pure parts (no DOM), tested by tests/js/chapterstate.test.mjs.

/** Replace `$student` in a diagram id with the student's node id (`user:student:alice`). */
function bind(id, student) {
  return student ? id.replaceAll("user:$student", `user:${student}`).replaceAll("$student", student) : id;
}

/**
 * What opening `step` does to the topology: the parts it points at, the event types the narration
 * shows (null: all), and the animation's speed (a number) or a pause. `student` is the student's
 * cluster user name (`student:alice`).
 */
export function stepFocus(step, student) {
  const highlight = step?.highlight || {};
  const nodes = (highlight.nodes || []).map((id) => bind(id, student));
  const edges = (highlight.edges || []).map(([a, b]) => [bind(a, student), bind(b, student)]);
  const narration = step?.narration?.length ? [...step.narration] : null;
  const speed = step?.timeline?.speed;
  return {
    spotlight: { nodes, edges },
    narration,
    paused: speed === 0,
    speed: typeof speed === "number" && speed > 0 ? speed : null,
  };
}

/**
 * How a verdict from the socket reads on the page: its status, one sentence, and the failures'
 * messages (already in the student's language). `messages` are the page's translated sentences.
 */
export function verdictView(verdict, messages) {
  const status = ["passed", "failing", "unknown", "pending"].includes(verdict.status) ? verdict.status : "pending";
  const text = {
    passed: messages.passed || "Passed.",
    failing: messages.failing || "Not yet:",
    unknown: messages.unknown || "The check could not look at your cluster just now; it will try again.",
    pending: messages.pending || "Not done yet: the check runs as you work.",
  }[status];
  const failures = status === "failing" ? (verdict.failures || []).map((f) => f.message) : [];
  return { status, text, failures };
}

/** Reconnect delays: 0.5 s, 1 s, 2 s ... at most 10 s. */
export function nextDelay(attempts) {
  return Math.min(10000, 500 * 2 ** Math.max(0, attempts));
}
