// RuleSage: a little progressive enhancement. Every form works without this file.
(function () {
  "use strict";

  // Character counter under the question box.
  document.querySelectorAll("textarea[data-counter]").forEach(function (box) {
    var out = document.getElementById(box.getAttribute("data-counter"));
    var max = parseInt(box.getAttribute("maxlength"), 10) || 1500;
    function update() {
      out.textContent = box.value.length + "/" + max;
      out.classList.toggle("over", box.value.length >= max);
    }
    box.addEventListener("input", update);
    update();
  });

  // Card names: what is typed is looked up (GET /api/cards) for the list; a picked name goes into the
  // question as [[Name]], the mark the card matcher reads as a card for certain.
  var finder = document.getElementById("card-finder");
  if (finder && window.fetch) {
    var nameBox = document.getElementById("card-name");
    var options = document.getElementById("card-names");
    var question = document.getElementById("question");
    var base = finder.getAttribute("data-cards");
    var timer = null;
    var latest = "";
    nameBox.addEventListener("input", function () {
      var typed = nameBox.value.trim();
      var picked = Array.prototype.some.call(options.options, function (o) { return o.value === typed; });
      if (picked) {
        var mark = "[[" + typed + "]]";
        question.value = question.value ? question.value.replace(/\s*$/, " ") + mark : mark;
        question.dispatchEvent(new Event("input"));
        nameBox.value = "";
        options.textContent = "";
        return;
      }
      clearTimeout(timer);
      if (typed.length < 2) return;
      timer = setTimeout(function () {
        latest = typed;
        fetch(base + encodeURIComponent(typed), { headers: { Accept: "application/json" } })
          .then(function (r) { return r.ok ? r.json() : { cards: [] }; })
          .then(function (data) {
            if (latest !== typed) return;
            options.textContent = "";
            (data.cards || []).forEach(function (c) {
              var o = document.createElement("option");
              o.value = c.name;
              o.label = c.type_line;
              options.appendChild(o);
            });
          })
          .catch(function () {});
      }, 150);
    });
  }

  // Ask with a live stream: passages found first (from the search), then the ruling when it is written.
  var form = document.getElementById("ask");
  if (!form || !window.fetch || !window.TextDecoder || !window.ReadableStream) return;
  var streamUrl = form.getAttribute("data-stream");
  var panel = document.getElementById("ask-progress");
  var status = document.getElementById("ask-status");
  var found = document.getElementById("ask-found");
  var errorBox = document.getElementById("ask-error");
  var button = form.querySelector("button[type=submit]");

  function setStatus(text, spinning) {
    status.textContent = "";
    if (spinning) {
      var s = document.createElement("span");
      s.className = "spinner";
      s.setAttribute("aria-hidden", "true");
      status.appendChild(s);
    }
    status.appendChild(document.createTextNode(" " + text));
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
    panel.hidden = true;
    button.disabled = false;
  }

  function pageLabel(p) {
    if (!p.page_start) return "";
    return p.page_end && p.page_end > p.page_start ? ", pp. " + p.page_start + "–" + p.page_end : ", p. " + p.page_start;
  }

  function showPassages(data) {
    found.textContent = "";
    (data.passages || []).forEach(function (p) {
      var li = document.createElement("li");
      var src = document.createElement("div");
      src.className = "src";
      src.textContent = p.doc_title + pageLabel(p) + (p.heading ? " · " + p.heading : "");
      var ex = document.createElement("p");
      ex.className = "excerpt";
      ex.textContent = p.excerpt;
      li.appendChild(src);
      li.appendChild(ex);
      found.appendChild(li);
    });
    var n = (data.passages || []).length;
    var took = data.search_span_ms ? " in " + Math.round(data.search_span_ms) + " ms" : "";
    setStatus("Found " + n + " passage" + (n === 1 ? "" : "s") + took + ". Writing the answer…", true);
  }

  function handle(event, data) {
    if (event === "passages") showPassages(data);
    else if (event === "ruling") { setStatus("Done. Opening the ruling…", false); window.location.assign(data.url); return true; }
    else if (event === "error") { showError(data.message); return true; }
    return false;
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    errorBox.hidden = true;
    button.disabled = true;
    panel.hidden = false;
    found.textContent = "";
    setStatus("Searching the books…", true);
    var finished = false;
    fetch(streamUrl, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (resp) {
        var type = resp.headers.get("content-type") || "";
        if (!resp.ok || type.indexOf("text/event-stream") !== 0) {
          return resp.json().then(function (body) { finished = true; showError(body.error || "The question could not be asked."); },
            function () { finished = true; showError("The question could not be asked (" + resp.status + ")."); });
        }
        var reader = resp.body.getReader();
        var decoder = new TextDecoder();
        var buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) {
              if (!finished) showError("The connection closed before the answer arrived. Please try again.");
              return;
            }
            buffer += decoder.decode(chunk.value, { stream: true });
            var parts = buffer.split("\n\n");
            buffer = parts.pop();
            parts.forEach(function (block) {
              var name = "message", data = "";
              block.split("\n").forEach(function (line) {
                if (line.indexOf("event: ") === 0) name = line.slice(7);
                else if (line.indexOf("data: ") === 0) data += line.slice(6);
              });
              if (data && !finished) finished = handle(name, JSON.parse(data));
            });
            return pump();
          });
        }
        return pump();
      })
      .catch(function () { if (!finished) { finished = true; form.submit(); } });  // degrade: a plain post
  });
})();
