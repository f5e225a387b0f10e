// The chat page of `holodeck serve --protocol rest`: one conversation with the agent,
// streamed over server-sent events; no framework, no build step, nothing from a CDN.
// Everything the server sends is shown as text (textContent), never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  agent: null,
  retrievalOnly: false,
  sessionId: sessionStorage.getItem("holodeck.session") || null,
  token: sessionStorage.getItem("holodeck.token") || "",
  busy: false,
  ready: false,
};

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  if (state.token) h["Authorization"] = "Bearer " + state.token;
  return h;
}

function showStatus(text, isError) {
  const box = $("status");
  box.hidden = !text;
  box.textContent = text || "";
  box.classList.toggle("error", Boolean(isError));
}

function askForToken(message) {
  $("token-form").hidden = false;
  showStatus(message, true);
  $("token").focus();
}

async function problemText(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (body.error_description) return body.error_description;
    if (body.title) return body.title;
  } catch (e) { /* not JSON */ }
  return response.status + " " + response.statusText;
}

async function start() {
  const health = await fetch("health").then((r) => r.json());
  state.agent = health.agent_name;
  state.retrievalOnly = Boolean(health.retrieval_only);
  $("agent").textContent = "HoloDeck: " + state.agent + (state.retrievalOnly ? " (search only)" : "");
  document.title = state.agent + " · HoloDeck";
  await pollReady();
}

async function pollReady() {
  const response = await fetch("ready", { headers: headers(false) });
  if (response.status === 401) {
    askForToken("Enter the server's access token to chat.");
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (response.ok && body.ready) {
    state.ready = true;
    showStatus("");
    $("message").focus();
    return;
  }
  state.ready = false;
  const tools = (body.tools || [])
    .map((t) => t.name + ": " + t.files_done + "/" + t.files_todo + " files")
    .join(", ");
  showStatus("The knowledge bases are being ingested for the first time; questions open when " +
    "they are ready. " + (tools ? "(" + tools + ")" : ""));
  setTimeout(pollReady, 1000);
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function openPassage(result) {
  $("passage-title").textContent = result.source;
  const where = [result.section, result.location].filter(Boolean).join(" · ");
  $("passage-where").textContent = (where || "whole file") + " · score " + result.score;
  $("passage-text").textContent = result.content;
  $("passage").showModal();
  $("passage-close").focus();
}

function addSource(list, seen, result) {
  const key = result.source + "|" + result.location;
  if (seen.has(key)) return;
  seen.add(key);
  const item = el("li");
  const link = el("a", "source", result.source);
  link.href = "#";
  link.addEventListener("click", (event) => { event.preventDefault(); openPassage(result); });
  item.append(link);
  const where = [result.location, result.section].filter(Boolean).join(" · ");
  if (where) item.append(el("span", "where", " (" + where + ")"));
  list.append(item);
}

function parseEvents(buffer, onEvent) {
  // Complete events end with a blank line; what follows the last one waits for more bytes.
  const parts = buffer.split("\n\n");
  const rest = parts.pop();
  for (const part of parts) {
    let name = "message", data = "";
    for (const line of part.split("\n")) {
      if (line.startsWith(":")) continue;
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    if (data) onEvent(name, JSON.parse(data));
  }
  return rest;
}

async function ask(message) {
  const turn = el("section", "turn");
  turn.append(el("div", "you", message));
  const tools = el("ul", "tools");
  const answer = el("div", "answer");
  const sources = el("ol", "sources");
  sources.setAttribute("aria-label", "Sources");
  turn.append(tools, answer, sources);
  $("log").append(turn);
  turn.scrollIntoView({ block: "end" });
  const seen = new Set();
  answer.textContent = "…";
  let text = "";
  const handle = (name, data) => {
    if (name === "stream_start") {
      state.sessionId = data.session_id;
      sessionStorage.setItem("holodeck.session", data.session_id);
    } else if (name === "tool_call_result") {
      const found = (data.results || []).length;
      const line = data.error
        ? data.name + ": " + data.error
        : data.name + (data.query ? " “" + data.query + "”" : "") +
          (data.kind === "search" ? " → " + found + " passage(s)" : "");
      const item = el("li", data.error ? "failed" : "", line);
      tools.append(item);
      for (const result of data.results || []) addSource(sources, seen, result);
    } else if (name === "message_delta") {
      if (!state.retrievalOnly) {
        text += data.delta;
        answer.textContent = text;
      }
    } else if (name === "stream_end") {
      if (state.retrievalOnly) answer.textContent = seen.size ? "Passages found:" : "Nothing found.";
      else if (!text) answer.textContent = "(no text)";
      if (data.notice) turn.append(el("div", "tools", "Notice: " + data.notice));
    } else if (name === "error") {
      answer.classList.add("error");
      answer.textContent = (text ? text + "\n\n" : "") + "Error: " + (data.detail || data.title);
    }
    turn.scrollIntoView({ block: "end" });
  };
  const body = { message };
  if (state.sessionId) body.session_id = state.sessionId;
  const response = await fetch("agent/" + encodeURIComponent(state.agent) + "/chat/stream", {
    method: "POST", headers: headers(true), body: JSON.stringify(body),
  });
  if (!response.ok) {
    answer.classList.add("error");
    answer.textContent = "Error: " + await problemText(response);
    if (response.status === 401) askForToken("The token was refused; enter it again.");
    if (response.status === 503) pollReady();
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), handle);
  }
}

async function send() {
  const box = $("message");
  const message = box.value.trim();
  if (!message || state.busy) return;
  if (!state.ready) { showStatus("Still ingesting: wait until the knowledge bases are ready."); return; }
  box.value = "";
  state.busy = true;
  $("send").disabled = true;
  try {
    await ask(message);
  } catch (error) {
    showStatus("The server could not be reached: " + error.message, true);
  } finally {
    state.busy = false;
    $("send").disabled = false;
    box.focus();
  }
}

async function newConversation() {
  if (state.sessionId) {
    await fetch("sessions/" + state.sessionId, { method: "DELETE", headers: headers(false) });
  }
  state.sessionId = null;
  sessionStorage.removeItem("holodeck.session");
  $("log").replaceChildren();
  $("message").focus();
}

$("ask").addEventListener("submit", (event) => { event.preventDefault(); send(); });
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
$("new").addEventListener("click", newConversation);
document.addEventListener("keydown", (event) => {
  if (event.altKey && event.key.toLowerCase() === "n") { event.preventDefault(); newConversation(); }
  if (event.key === "/" && document.activeElement === document.body) {
    event.preventDefault();
    $("message").focus();
  }
});
$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  sessionStorage.setItem("holodeck.token", state.token);
  $("token-form").hidden = true;
  showStatus("");
  pollReady();
});

start().catch((error) => showStatus("The server could not be reached: " + error.message, true));
