// META: global=window,shadowrealm-in-window,jsshell

'use strict';

test(() => {}, 'window only; the other scopes are listed as not run');
