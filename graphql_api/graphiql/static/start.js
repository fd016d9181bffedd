// Starts GraphiQL on the page's #graphiql element. A served file, not an inline script, so the
// page's Content-Security-Policy can say script-src 'self'. With data-sign-in (development
// only) it first reads the demo users and adds a "Sign in as" control that writes the
// Authorization header into GraphiQL's header editor. Whenever the headers change (chosen
// there or written by hand) the schema is fetched again with them: under TRUSTED_DOCUMENTS
// only a role that bypasses the manifest may introspect, so the page's first, anonymous
// introspection is refused, and GraphiQL's own "Re-fetch GraphQL schema" sends the headers
// the page had when it last rendered. The EXPLAIN panel (a GraphiQL plugin) asks for each
// query's plan (extensions.explain) and shows the last one the server gave: per field path its
// loaders and waves, then each DynamoDB call with its keys, items, RCU and time.
"use strict";

(function () {
  const root = document.getElementById("graphiql");
  const h = React.createElement;
  const url = new URL(root.dataset.endpoint, window.location.href).href;
  // Subscriptions go over the WebSocket at the same path (graphql-transport-ws, with GraphiQL's
  // bundled graphql-ws client); the header editor's headers become connection_init's payload,
  // which is where the server reads the token of a socket.
  // What the EXPLAIN panel shows, and who redraws it when a new plan arrives.
  const explain = { wanted: true, plan: null, note: "Run a query to see its plan.", listeners: new Set() };
  function showPlan(plan, note) {
    explain.plan = plan;
    explain.note = note;
    explain.listeners.forEach(function (redraw) {
      redraw({});
    });
  }

  function newFetcher() {
    const base = GraphiQL.createFetcher({ url: url, subscriptionUrl: url.replace(/^http/, "ws") });
    return function (params, options) {
      const introspection = params.operationName === "IntrospectionQuery";
      if (explain.wanted && !introspection) {
        params = Object.assign({}, params, {
          extensions: Object.assign({}, params.extensions || {}, { explain: true }),
        });
      }
      const result = base(params, options);
      if (introspection || !result || typeof result.then !== "function") {
        return result; // a subscription's stream: its deliveries carry no plan here
      }
      // The plan goes to the panel, not the result pane, which shows the response as before.
      function tap(response) {
        const plan = response && response.extensions && response.extensions.plan;
        showPlan(
          plan || null,
          plan ? "" : "No plan: only admins and platform operators (or anyone in development) get one.",
        );
        if (plan) {
          delete response.extensions.plan;
        }
      }
      // GraphiQL's HTTP fetcher answers with an async iterable (it reads multipart answers),
      // which yields the JSON body of a plain one.
      return result.then(function (response) {
        if (response && typeof response[Symbol.asyncIterator] === "function") {
          return (async function* () {
            for await (const part of response) {
              tap(part);
              yield part;
            }
          })();
        }
        tap(response);
        return response;
      });
    };
  }

  function cell(value) {
    return h("td", null, Array.isArray(value) ? value.join(", ") : value === null ? "" : String(value));
  }

  function table(className, heads, rows) {
    return h(
      "table",
      { className: className },
      h("thead", null, h("tr", null, heads.map(function (head) {
        return h("th", { key: head }, head);
      }))),
      h("tbody", null, rows),
    );
  }

  function ExplainPanel() {
    const [, redraw] = React.useState({});
    const [wanted, setWanted] = React.useState(explain.wanted);
    React.useEffect(function () {
      explain.listeners.add(redraw);
      return function () {
        explain.listeners.delete(redraw);
      };
    }, []);
    const plan = explain.plan;
    const toggle = h(
      "label",
      { className: "hr-explain-toggle" },
      h("input", {
        type: "checkbox",
        checked: wanted,
        onChange: function (event) {
          explain.wanted = event.target.checked;
          setWanted(event.target.checked);
        },
      }),
      " Ask for the plan of each query",
    );
    if (!plan) {
      return h("div", { className: "hr-explain" }, h("h2", null, "EXPLAIN"), toggle, h("p", null, explain.note));
    }
    const fields = plan.fields.map(function (field) {
      return h("tr", { key: field.path }, cell(field.path), cell(field.loaders), cell(field.accessPatterns),
        cell(field.waves), cell(field.calls));
    });
    const calls = plan.calls.map(function (call) {
      return h("tr", { key: call.call, title: call.keys.join("\n") }, cell(call.call), cell(call.wave),
        cell(call.operation + (call.index ? " (" + call.index + ")" : "")), cell(call.fields), cell(call.keys.length),
        cell(call.itemsRead), cell(call.readCapacityUnits), cell(call.ms));
    });
    return h(
      "div",
      { className: "hr-explain" },
      h("h2", null, "EXPLAIN"),
      toggle,
      h("p", { className: "hr-explain-totals" }, plan.waves + " waves, " + plan.requestCount + " DynamoDB calls, " +
        plan.itemsRead + " items, " + plan.readCapacityUnits + " RCU"),
      h("h3", null, "Fields"),
      table("hr-explain-fields", ["path", "loader", "access pattern", "waves", "calls"], fields),
      h("h3", null, "Calls (hover for keys)"),
      table("hr-explain-calls", ["#", "wave", "operation", "fields", "keys", "items", "RCU", "ms"], calls),
    );
  }

  function ExplainIcon() {
    return h("span", { className: "hr-explain-icon", "aria-hidden": "true" }, "⏱");
  }

  function headersFor(user) {
    return JSON.stringify(user ? { Authorization: "Bearer " + user.token } : {}, null, 2);
  }

  function SignInAs(props) {
    const editors = GraphiQL.React.useEditorContext({ nonNull: true });
    const [chosen, setChosen] = React.useState("");
    // GraphiQL makes its header editor once CodeMirror has loaded, asynchronously: a choice
    // made before then waits here and is written when the editor appears.
    const pending = React.useRef(null);
    const headerEditor = editors.headerEditor;
    React.useEffect(
      function () {
        if (headerEditor && pending.current !== null) {
          headerEditor.setValue(pending.current);
          pending.current = null;
          props.onSignIn();
        }
      },
      [headerEditor],
    );
    function choose(event) {
      const index = event.target.value;
      setChosen(index);
      const headers = headersFor(index === "" ? null : props.users[Number(index)]);
      if (headerEditor) {
        headerEditor.setValue(headers);
        props.onSignIn();
      } else {
        pending.current = headers;
      }
    }
    const options = [h("option", { key: "", value: "" }, "nobody (no token)")].concat(
      props.users.map(function (user, index) {
        return h("option", { key: index, value: String(index) }, user.label);
      }),
    );
    return h(
      "label",
      { className: "hr-sign-in" },
      h("span", null, "Sign in as"),
      h("select", { id: "hr-sign-in-as", value: chosen, onChange: choose }, options),
    );
  }

  function render(users) {
    const page = ReactDOM.createRoot(root);
    const props = {
      fetcher: newFetcher(),
      shouldPersistHeaders: false,
      plugins: [{ title: "EXPLAIN", icon: ExplainIcon, content: ExplainPanel }],
    };
    const children = [];
    function draw() {
      page.render(h(GraphiQL, props, ...children));
    }
    // GraphiQL introspects again when its fetcher changes, reading the header editor as it
    // renders: a new fetcher, once the headers are in the editor, fetches the schema with them.
    function signedIn() {
      props.fetcher = newFetcher();
      draw();
    }
    let editing = null;
    props.onEditHeaders = function () {
      clearTimeout(editing);
      editing = setTimeout(signedIn, 500); // once the typing has stopped
    };
    if (users) {
      // Show the header editor, so the token the control sets is visible.
      props.defaultEditorToolsVisibility = "headers";
      children.push(h(GraphiQL.Logo, { key: "logo" }, h(SignInAs, { users: users, onSignIn: signedIn })));
    }
    draw();
  }

  const signIn = root.dataset.signIn;
  if (!signIn) {
    render(null);
    return;
  }
  fetch(signIn, { headers: { Accept: "application/json" } })
    .then(function (response) {
      if (!response.ok) {
        throw new Error("GET " + signIn + " answered HTTP " + response.status);
      }
      return response.json();
    })
    .then(function (body) {
      render(body.users);
    })
    .catch(function (error) {
      console.error("Sign in as is unavailable:", error);
      render(null);
    });
})();
