/* Keyboard-first triage. Plain JS, no build step. */
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const csrf = () => {
    const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    const input = $("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  };
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));

  /* ---- bar widths and legend colours ----
     The Content-Security-Policy allows no style attributes, so templates carry the values as
     data-width (percent) and data-swatch (a colour) and they are applied here, also to rows
     htmx swaps in. */
  function applyStyles(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const targets = $$("[data-width], [data-swatch]", scope);
    if (scope.matches && scope.matches("[data-width], [data-swatch]")) targets.push(scope);
    targets.forEach((el) => {
      const width = parseFloat(el.dataset.width);
      if (!Number.isNaN(width)) el.style.width = Math.max(0, Math.min(100, width)) + "%";
      if (el.dataset.swatch && /^#[0-9a-fA-F]{3,8}$/.test(el.dataset.swatch)) el.style.background = el.dataset.swatch;
    });
  }
  applyStyles(document);
  document.addEventListener("htmx:load", (e) => applyStyles(e.detail && e.detail.elt));

  function flash(text, kind, action) {
    let stack = $(".flash-stack");
    if (!stack) {
      stack = document.createElement("div");
      stack.className = "flash-stack";
      stack.setAttribute("role", "status");
      stack.setAttribute("aria-live", "polite");
      document.body.appendChild(stack);
    }
    const div = document.createElement("div");
    div.className = "flash flash-" + (kind || "info");
    div.textContent = text;
    if (action) {
      // An undoable decision: the toast keeps its Undo until it is used or the page changes.
      const button = document.createElement("button");
      button.type = "button";
      button.className = "btn btn-small";
      button.dataset.undo = "";
      button.textContent = action.label;
      button.addEventListener("click", () => { button.disabled = true; action.run(div); });
      div.append(" ", button);
      div.classList.add("flash-undo");
    } else {
      setTimeout(() => div.remove(), 5000);
    }
    stack.appendChild(div);
  }

  /* ---- the moderator's time zone: the browser's, until they pick one ---- */
  const browserZone = (() => {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (_) { return ""; }
  })();
  // Forms that take a time carry the browser's zone, so even a first page reads it right.
  $$("input[data-browser-tz]").forEach((input) => { input.value = browserZone; });
  if (document.body.dataset.tzUrl && !document.body.dataset.tz && browserZone) {
    const body = new FormData();
    body.append("tz", browserZone);
    fetch(document.body.dataset.tzUrl, {
      method: "POST", body, credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Accept": "application/json" },
    }).then((r) => (r.ok ? r.json() : null)).then((data) => {
      if (data && data.tz) document.body.dataset.tz = data.tz;
    }).catch(() => { /* the next page tries again */ });
  }

  /* ---- help overlay ---- */
  const help = $("#help");
  function openHelp() { if (help && !help.open) help.showModal(); }
  $$("[data-help-open]").forEach((b) => b.addEventListener("click", openHelp));

  /* ---- reason codes follow the chosen label ---- */
  function syncReasons(select, label) {
    if (!select) return;
    $$("option[data-label]", select).forEach((o) => {
      const off = label && o.dataset.label !== label;
      o.disabled = !!off;
      o.hidden = !!off;
    });
    const cur = select.selectedOptions[0];
    if (cur && cur.disabled) select.value = "";
  }
  // A choice names the label its reasons belong to: a label radio by its value, an appeal
  // outcome by data-reason-label (upholding a removal takes a spam reason).
  $$("form").forEach((form) => {
    const select = $("[data-reason-select]", form);
    $$("input[name=label], input[data-reason-label]", form).forEach((r) => {
      const label = r.dataset.reasonLabel || r.value;
      r.addEventListener("change", () => syncReasons(select, label));
      if (r.checked) syncReasons(select, label);
    });
  });

  /* ---- the reason each key records (s / h), kept in this browser ---- */
  const KEY_REASON_STORE = "dashboard.keyReason.";
  function keyReason(label) {
    const select = $("[data-key-reason=" + label + "]");
    return select ? select.value : (localStorage.getItem(KEY_REASON_STORE + label) || "");
  }
  $$("[data-key-reason]").forEach((select) => {
    const label = select.dataset.keyReason;
    const saved = localStorage.getItem(KEY_REASON_STORE + label);
    if (saved && $("option[value='" + CSS.escape(saved) + "']", select)) select.value = saved;
    select.addEventListener("change", () => localStorage.setItem(KEY_REASON_STORE + label, select.value));
  });

  /* ---- flash messages fade, except undo ones ---- */
  $$(".flash").forEach((f) => { if (!f.classList.contains("flash-undo")) setTimeout(() => f.remove(), 6000); });

  /* ---- queue ---- */
  const table = $("[data-queue]");
  let current = -1;
  const rows = () => $$("tr.qrow");
  function setCurrent(i) {
    const list = rows();
    if (!list.length) { current = -1; return; }
    current = Math.max(0, Math.min(i, list.length - 1));
    list.forEach((r, n) => r.classList.toggle("is-current", n === current));
    const row = list[current];
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    if (current === list.length - 1) {
      const more = $("[data-load-more]");
      if (more) more.click();
    }
  }
  function currentRow() { return rows()[current]; }

  const bulkForm = $("#bulk-form");
  if (bulkForm) {
    // A bulk action without a chosen reason records the key reason of its label.
    bulkForm.addEventListener("submit", (e) => {
      const label = e.submitter && e.submitter.value;
      const select = label && $("[data-reason-for=" + label + "]", bulkForm);
      if (select && !select.value && label) select.value = keyReason(label);
    });
  }
  function updateBulk() {
    if (!bulkForm) return;
    const checked = $$("input[data-select]:checked");
    $$("tr.qrow").forEach((r) => r.classList.toggle("is-selected", !!$("input[data-select]:checked", r)));
    $("[data-selected-count]", bulkForm).textContent = checked.length;
    bulkForm.hidden = checked.length === 0;
  }
  if (table) {
    table.addEventListener("change", (e) => { if (e.target.matches("input[data-select]")) updateBulk(); });
    const all = $("[data-select-all]");
    if (all) all.addEventListener("change", () => { $$("input[data-select]").forEach((c) => { c.checked = all.checked; }); updateBulk(); });
    const clear = $("[data-clear-selection]");
    if (clear) clear.addEventListener("click", () => { $$("input[data-select]").forEach((c) => { c.checked = false; }); if (all) all.checked = false; updateBulk(); });
    table.addEventListener("click", (e) => {
      const row = e.target.closest("tr.qrow");
      if (row && !e.target.closest("a,input,button")) setCurrent(rows().indexOf(row));
    });
    updateBulk();
    if (rows().length) setCurrent(0);
  }

  async function quickDecide(label) {
    const row = currentRow();
    if (!row) return;
    row.classList.add("is-leaving");
    const body = new FormData();
    body.append("label", label);
    body.append("quick", "1");
    body.append("reason_code", keyReason(label));
    if (row.dataset.version) body.append("version", row.dataset.version);
    try {
      const resp = await fetch(row.dataset.decideUrl, {
        method: "POST", body, credentials: "same-origin",
        headers: { "X-CSRFToken": csrf(), "Accept": "application/json" },
      });
      if (!resp.ok) {
        let msg = "Could not record the decision.";
        try { msg = (await resp.json()).error.message || msg; } catch (_) { /* not JSON */ }
        row.classList.remove("is-leaving");
        if (resp.status === 409) row.classList.add("is-stale");
        flash(msg, "error");
        return;
      }
      const decided = await resp.json();
      const idx = rows().indexOf(row);
      row.remove();
      updateBulk();
      const undoUrl = table.dataset.undoUrl && table.dataset.undoUrl.replace("/0/", "/" + decided.decision_id + "/");
      flash("Post #" + row.dataset.postId + (label === "spam" ? " removed as spam." : " approved as not spam."), "success",
        undoUrl ? { label: "Undo", run: (toast) => undoDecision(undoUrl, row.dataset.postId, toast) } : null);
      if (rows().length) setCurrent(idx); else window.location.reload();
    } catch (err) {
      row.classList.remove("is-leaving");
      flash("Network error: " + err.message, "error");
    }
  }

  /* ---- claim: assign the current row to me ---- */
  async function claimRow() {
    const row = currentRow();
    if (!row || !table.dataset.claimUrl) return;
    const url = table.dataset.claimUrl.replace("/0/", "/" + row.dataset.postId + "/");
    try {
      const resp = await fetch(url, {
        method: "POST", credentials: "same-origin",
        headers: { "X-CSRFToken": csrf(), "Accept": "application/json" },
      });
      let data = null;
      try { data = await resp.json(); } catch (_) { /* not JSON */ }
      if (!resp.ok) {
        flash((data && data.error && data.error.message) || "Could not assign the post.", "error");
        return;
      }
      const meta = $(".meta", row);
      let badge = $(".badge-assigned", row);
      if (!badge && meta) {
        badge = document.createElement("span");
        badge.className = "badge badge-assigned";
        meta.appendChild(badge);
      }
      if (badge) {
        badge.dataset.assignee = data.assigned_to || "";
        badge.textContent = "assigned to you" + (data.assigned_queue ? " · " + data.assigned_queue : "");
      }
      flash("Post #" + row.dataset.postId + " is assigned to you.", "success");
    } catch (err) {
      flash("Network error: " + err.message, "error");
    }
  }

  async function undoDecision(url, postId, toast) {
    const resp = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Accept": "application/json" },
    });
    toast.remove();
    if (!resp.ok) {
      let msg = "Could not undo the decision.";
      try { msg = (await resp.json()).error.message || msg; } catch (_) { /* not JSON */ }
      flash(msg, "error");
      return;
    }
    // The post is back in the queue: show it where it now sorts.
    window.location.reload();
  }

  /* ---- detail ---- */
  const decisionForm = $("[data-decision-form]");
  // A decided post: the form sits in the closed "Override" panel; keys open it first.
  const overridePanel = $("[data-override]");
  function pickLabel(label) {
    if (!decisionForm) return;
    if (overridePanel && !overridePanel.open) overridePanel.open = true;
    const radio = $("input[name=label][value=" + label + "]", decisionForm);
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    const select = $("[data-reason-select]", decisionForm);
    if (select) {
      // Start from the reason the key records; the moderator can change it before submitting.
      if (!select.value) select.value = localStorage.getItem(KEY_REASON_STORE + label) || select.dataset["keyReason" + (label === "spam" ? "Spam" : "Ham")] || "";
      select.focus();
    }
  }

  /* ---- keys ---- */
  let pendingG = false;
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      if (help && help.open) return;
      if (typing(document.activeElement)) document.activeElement.blur();
      return;
    }
    if (decisionForm && e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
      e.preventDefault();
      decisionForm.requestSubmit();
      return;
    }
    if (typing(e.target) || e.metaKey || e.ctrlKey || e.altKey) return;
    if (pendingG) {
      pendingG = false;
      if (e.key === "q") { window.location.href = "/dashboard/"; }
      return;
    }
    switch (e.key) {
      case "?": e.preventDefault(); openHelp(); return;
      case "/": {
        const s = $("[data-search]");
        if (s) { e.preventDefault(); s.focus(); }
        return;
      }
      case "g": pendingG = true; setTimeout(() => { pendingG = false; }, 1200); return;
      case "f": {
        const link = $("[data-shortcut=f]");
        window.location.href = link ? link.href : "/dashboard/focus/";
        return;
      }
    }
    if (table) {
      switch (e.key) {
        case "j": case "ArrowDown": e.preventDefault(); setCurrent(current + 1); break;
        case "k": case "ArrowUp": e.preventDefault(); setCurrent(current - 1); break;
        case "o": case "Enter": { const r = currentRow(); if (r) window.location.href = r.dataset.url; break; }
        case "x": {
          const r = currentRow();
          const c = r && $("input[data-select]", r);  // rows of a view without selection have none
          if (c) { c.checked = !c.checked; updateBulk(); }
          break;
        }
        case "s": quickDecide("spam"); break;
        case "h": quickDecide("ham"); break;
        case "c": claimRow(); break;
      }
      return;
    }
    if (decisionForm) {
      switch (e.key) {
        case "s": e.preventDefault(); pickLabel("spam"); break;
        case "h": e.preventDefault(); pickLabel("ham"); break;
        case "n": { const skip = $("[data-skip]"); if (skip) skip.click(); break; }
        case "c": { const take = $("[data-assign-claim]"); if (take) take.click(); break; }
      }
    }
  });

  document.body.addEventListener("htmx:afterSwap", () => { updateBulk(); });
})();
