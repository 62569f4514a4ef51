// META: title=test WebNN API add operation
// META: global=window
// META: variant=?cpu
// META: variant=?gpu
// META: variant=?cpu&tc=add%20float32%202D%20broadcast
// META: script=../resources/utils.js
// META: timeout=long

'use strict';

// Conformance cases in the shape WPT's webnn tests use.
const addTests = [
  {
    name: 'add float32 1D',
    graph: {
      inputs: {
        inputA: {data: [1, 2, 3, 4.5], descriptor: {shape: [4], dataType: 'float32'}},
        inputB: {data: [10, 20, 30, -0.25], descriptor: {shape: [4], dataType: 'float32'}},
      },
      operators: [{name: 'add', arguments: [{a: 'inputA'}, {b: 'inputB'}], outputs: 'output'}],
      expectedOutputs: {output: {data: [11, 22, 33, 4.25], descriptor: {shape: [4], dataType: 'float32'}}},
    },
  },
  {
    name: 'add float32 2D broadcast',
    graph: {
      inputs: {
        inputA: {data: [1, 2, 3, 4, 5, 6], descriptor: {shape: [2, 3], dataType: 'float32'}},
        inputB: {data: [0.5, -1, 100], descriptor: {shape: [3], dataType: 'float32'}},
      },
      operators: [{name: 'add', arguments: [{a: 'inputA'}, {b: 'inputB'}], outputs: 'output'}],
      expectedOutputs: {output: {data: [1.5, 1, 103, 4.5, 4, 106], descriptor: {shape: [2, 3], dataType: 'float32'}}},
    },
  },
  {
    name: 'add int32 0D',
    graph: {
      inputs: {
        inputA: {data: [2147483000], descriptor: {shape: [], dataType: 'int32'}},
        inputB: {data: [-7], descriptor: {shape: [], dataType: 'int32'}},
      },
      operators: [{name: 'add', arguments: [{a: 'inputA'}, {b: 'inputB'}], outputs: 'output'}],
      expectedOutputs: {output: {data: [2147482993], descriptor: {shape: [], dataType: 'int32'}}},
    },
  },
  {
    // float16 travels as Uint16Array bit patterns: 1.0 + 0.5 = 1.5, 2.0 + 0.5 = 2.5.
    name: 'add float16 1D',
    graph: {
      inputs: {
        inputA: {data: [0x3C00, 0x4000], descriptor: {shape: [2], dataType: 'float16'}},
        inputB: {data: [0x3800, 0x3800], descriptor: {shape: [2], dataType: 'float16'}},
      },
      operators: [{name: 'add', arguments: [{a: 'inputA'}, {b: 'inputB'}], outputs: 'output'}],
      expectedOutputs: {output: {data: [0x3E00, 0x4100], descriptor: {shape: [2], dataType: 'float16'}}},
    },
  },
  {
    // Neither supported by the polyfill's opSupportLimits() nor required: filtered out.
    name: 'add int4 1D',
    graph: {
      inputs: {
        inputA: {data: [0x21], descriptor: {shape: [2], dataType: 'int4'}},
        inputB: {data: [0x11], descriptor: {shape: [2], dataType: 'int4'}},
      },
      operators: [{name: 'add', arguments: [{a: 'inputA'}, {b: 'inputB'}], outputs: 'output'}],
      expectedOutputs: {output: {data: [0x32], descriptor: {shape: [2], dataType: 'int4'}}},
    },
  },
];

webnn_conformance_test(addTests);
