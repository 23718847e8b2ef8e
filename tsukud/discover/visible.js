// What a person sees of a page Chromium laid out (evaluated by tsukud/discover/render_page.py
// in an isolated world, page scripts disabled). Returns the visible text, in document order.
//
// A text node (or, when only part of it passes, each of its words) is kept only when it
// has a box that is: non-empty; on screen (not left of, above or beyond the viewport's
// width); not clipped away by an ancestor (overflow hidden/clip, `clip`, `clip-path`,
// an empty scroll box); readable (font-size and box height >= MIN_PX, so scale(0) and
// 1px text go); of real opacity (the product over its ancestors >= MIN_OPACITY, colour
// alpha included); of a colour distinct from the background it sits on (contrast ratio
// >= MIN_CONTRAST, -webkit-text-fill-color counted); and not inside a closed <details>
// or anything else the engine does not render (checkVisibility), nor under aria-hidden.
(() => {
  const MIN_PX = 6, MIN_OPACITY = 0.1, MIN_CONTRAST = 1.5;
  const root = document.documentElement;
  if (!root) return "";
  const viewW = window.innerWidth;
  const pageH = Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0, window.innerHeight);
  const styleOf = new Map();
  const css = (el) => {
    let s = styleOf.get(el);
    if (!s) { s = getComputedStyle(el); styleOf.set(el, s); }
    return s;
  };
  const parseColour = (text) => {
    const m = /rgba?\(([^)]*)\)/.exec(text || "");
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const luminance = (c) => {
    const ch = c.slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const contrast = (a, b) => {
    const la = luminance(a), lb = luminance(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  };
  const ancestors = (el) => {
    const out = [];
    for (let a = el; a; a = a.parentElement) out.push(a);
    return out;
  };
  // Per element: null when nothing of it can be seen, else its clip boxes and hit-test need.
  const verdicts = new Map();
  const judge = (el) => {
    if (verdicts.has(el)) return verdicts.get(el);
    let v = null;
    const chain = ancestors(el);
    const ok = (() => {
      // Hidden from a screen reader's user is hidden from a reader too (the stripper agrees).
      if (el.closest('[aria-hidden="true" i]')) return false;
      // Shown only where scripts are off (here), not to a person browsing with them on.
      if (el.closest("noscript")) return false;
      if (el.checkVisibility && !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true, contentVisibilityAuto: true, opacityProperty: true, visibilityProperty: true })) return false;
      for (const a of chain) {
        if (a.parentElement && a.parentElement.localName === "details" && !a.parentElement.open) {
          const first = a.parentElement.querySelector(":scope > summary");
          if (a !== first) return false;
        }
      }
      const s = css(el);
      if (s.visibility !== "visible") return false;
      if (parseFloat(s.fontSize) < MIN_PX) return false;
      let opacity = 1;
      for (const a of chain) opacity *= parseFloat(css(a).opacity);
      const fill = parseColour(s.webkitTextFillColor) || parseColour(s.color);
      if (!fill || opacity * fill[3] < MIN_OPACITY) return false;
      let bg = [255, 255, 255, 1];
      let unknownBackground = false;
      for (const a of chain.slice().reverse()) {
        const as = css(a);
        if (as.backgroundImage && as.backgroundImage !== "none") {
          const stops = [...as.backgroundImage.matchAll(/rgba?\([^)]*\)/g)].map((m) => parseColour(m[0]));
          if (/url\(/.test(as.backgroundImage) || !stops.length) unknownBackground = true;
          else { bg = over(stops[0], bg); unknownBackground = false; }
        }
        const c = parseColour(as.backgroundColor);
        if (c && c[3] > 0) { bg = over(c, bg); unknownBackground = false; }
      }
      if (!unknownBackground && contrast(over(fill, bg), bg) < MIN_CONTRAST) return false;
      const clips = [];
      let hitTest = false;
      for (const a of chain) {
        const as = css(a);
        const box = a.getBoundingClientRect();
        if (as.clipPath && as.clipPath !== "none") hitTest = true;
        if ((as.maskImage && as.maskImage !== "none") || (as.webkitMaskImage && as.webkitMaskImage !== "none")) hitTest = true;
        if (as.clip && as.clip !== "auto" && /^(absolute|fixed)$/.test(as.position)) {
          const r = /rect\(([^)]*)\)/.exec(as.clip);
          if (r) {
            const [t, rt, b, l] = r[1].split(/[\s,]+/).map((x) => (x === "auto" ? NaN : parseFloat(x)));
            clips.push({
              left: box.left + (isNaN(l) ? 0 : l), top: box.top + (isNaN(t) ? 0 : t),
              right: isNaN(rt) ? box.right : box.left + rt, bottom: isNaN(b) ? box.bottom : box.top + b,
            });
          }
        }
        const clipsOverflow = (o) => o === "hidden" || o === "clip";
        const scrolls = (o) => o === "auto" || o === "scroll";
        if (a !== root && a !== document.body) {
          if (clipsOverflow(as.overflowX) || clipsOverflow(as.overflowY) || a.namespaceURI === "http://www.w3.org/2000/svg" && a.localName === "svg") {
            clips.push({
              left: clipsOverflow(as.overflowX) || a.localName === "svg" ? box.left : -Infinity,
              right: clipsOverflow(as.overflowX) || a.localName === "svg" ? box.right : Infinity,
              top: clipsOverflow(as.overflowY) || a.localName === "svg" ? box.top : -Infinity,
              bottom: clipsOverflow(as.overflowY) || a.localName === "svg" ? box.bottom : Infinity,
            });
          }
          if ((scrolls(as.overflowX) || scrolls(as.overflowY)) && (box.width < MIN_PX || box.height < MIN_PX)) return false;
        }
      }
      v = { clips, hitTest, el };
      return true;
    })();
    const verdict = ok ? v : null;
    verdicts.set(el, verdict);
    return verdict;
  };
  // Rects are measured at scroll 0; a hit test scrolls its point into view and back.
  const seen = (rect, v) => {
    let { left, top, right, bottom } = rect;
    for (const c of v.clips) {
      left = Math.max(left, c.left); top = Math.max(top, c.top);
      right = Math.min(right, c.right); bottom = Math.min(bottom, c.bottom);
    }
    const w = right - left, h = bottom - top;
    if (w < 1 || h < MIN_PX) return false;
    if (w * h < 0.5 * rect.width * rect.height) return false;
    if (right <= 0 || bottom <= 0 || left >= viewW || top >= pageH) return false;
    if (v.hitTest) {
      const y = top + h / 2;
      if (y < 0 || y >= window.innerHeight) window.scrollTo(0, Math.max(0, y - 100));
      const shift = window.scrollY;
      let hits = true;
      for (const x of [left + w / 4, left + w / 2, left + (3 * w) / 4]) {
        const hit = document.elementFromPoint(x, y - shift);
        if (!hit || !(hit === v.el || v.el.contains(hit))) { hits = false; break; }
      }
      if (shift) window.scrollTo(0, 0);
      if (!hits) return false;
    }
    return true;
  };
  const range = document.createRange();
  const rectsOf = (node, start, end) => {
    range.setStart(node, start);
    range.setEnd(node, end);
    return [...range.getClientRects()];
  };
  const blockOf = (el) => {
    for (let a = el; a; a = a.parentElement) {
      if (!css(a).display.startsWith("inline")) return a;
    }
    return root;
  };
  const out = [];
  let lastBlock = null;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data;
    if (!text.trim()) continue;
    const el = node.parentElement;
    if (!el || /^(script|style|noscript|template|title|head)$/.test(el.localName)) continue;
    if (el.localName === "details" && !el.open) continue; // text straight in a closed <details>
    const v = judge(el);
    if (!v) continue;
    const rects = rectsOf(node, 0, text.length).filter((r) => r.width > 0 || r.height > 0);
    if (!rects.length) continue;
    const passing = rects.filter((r) => seen(r, v));
    let kept = "";
    if (passing.length === rects.length) kept = text;
    else if (passing.length) {
      const words = [];
      for (const m of text.matchAll(/\S+/g)) {
        const wr = rectsOf(node, m.index, m.index + m[0].length);
        if (wr.length && wr.every((r) => seen(r, v))) words.push(m[0]);
      }
      kept = words.join(" ");
    }
    if (!kept) continue;
    const block = blockOf(el);
    if (block !== lastBlock) out.push(" ");
    lastBlock = block;
    out.push(kept);
  }
  return out.join("");
})()
