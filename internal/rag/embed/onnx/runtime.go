//go:build cgo

package onnx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ortRuntime is the process's ONNX Runtime: its environment is global to the
// library, so it is initialised once and shared by every embedder. A mutex
// rather than a sync.Once: a failed load (wrong path) may be retried with
// another path.
var ortRuntime struct {
	mu   sync.Mutex
	path string // the library loaded; "" until one is
}

// loadRuntime loads the library at path (DefaultLibrary when empty), unless one
// is loaded already.
func loadRuntime(path string) error {
	ortRuntime.mu.Lock()
	defer ortRuntime.mu.Unlock()
	if ortRuntime.path != "" {
		if path != "" && path != ortRuntime.path {
			return fmt.Errorf("onnx: ONNX Runtime is already loaded from %s; a process loads one library, so %s cannot be loaded too (give every onnx embedder the same library_path)", ortRuntime.path, path)
		}
		return nil
	}
	if path == "" {
		path = DefaultLibrary
	}
	hint := "set library_path or " + LibraryEnv + " to the path of libonnxruntime.so"
	if strings.Contains(path, "/") {
		// The loader's message repeats the path; a missing file says it plainly.
		if _, err := os.Stat(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("onnx: cannot load ONNX Runtime from %s: %v; %s", path, err, hint)
		}
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return fmt.Errorf("onnx: cannot load ONNX Runtime from %s: %v; %s", path, err, hint)
	}
	ortRuntime.path = path
	return nil
}

// ortSession is a model loaded into ONNX Runtime. Run is safe for concurrent
// use (ONNX Runtime's sessions are).
type ortSession struct {
	s *ort.DynamicAdvancedSession
	// inputs are the model's inputs in its order: each is input_ids,
	// attention_mask or token_type_ids.
	inputs []string
	int32s bool // the model takes int32 ids rather than int64
}

func openSession(libraryPath, modelPath string) (session, error) {
	if err := loadRuntime(libraryPath); err != nil {
		return nil, err
	}
	ins, outs, err := ort.GetInputOutputInfo(modelPath)
	if err != nil {
		return nil, fmt.Errorf("onnx: model %s: %v", modelPath, err)
	}
	s := &ortSession{}
	hasIDs := false
	for i, in := range ins {
		switch in.Name {
		case "input_ids", "attention_mask", "token_type_ids":
		default:
			return nil, fmt.Errorf("onnx: model %s: input %q is not one a BERT-style model is fed (input_ids, attention_mask, token_type_ids)", modelPath, in.Name)
		}
		hasIDs = hasIDs || in.Name == "input_ids"
		switch in.DataType {
		case ort.TensorElementDataTypeInt64:
		case ort.TensorElementDataTypeInt32:
			if i == 0 {
				s.int32s = true
			}
		default:
			return nil, fmt.Errorf("onnx: model %s: input %s is %v; want int64 or int32", modelPath, in.Name, in.DataType)
		}
		if i > 0 && (in.DataType == ort.TensorElementDataTypeInt32) != s.int32s {
			return nil, fmt.Errorf("onnx: model %s: inputs mix int32 and int64", modelPath)
		}
		s.inputs = append(s.inputs, in.Name)
	}
	if !hasIDs {
		return nil, fmt.Errorf("onnx: model %s has no input_ids input; is it a text encoder?", modelPath)
	}
	if len(outs) == 0 {
		return nil, fmt.Errorf("onnx: model %s has no outputs", modelPath)
	}
	out := outs[0]
	if i := slices.IndexFunc(outs, func(o ort.InputOutputInfo) bool { return o.Name == "last_hidden_state" }); i >= 0 {
		out = outs[i]
	}
	if out.DataType != ort.TensorElementDataTypeFloat {
		return nil, fmt.Errorf("onnx: model %s: output %s is %v; want float32", modelPath, out.Name, out.DataType)
	}
	s.s, err = ort.NewDynamicAdvancedSession(modelPath, s.inputs, []string{out.Name}, nil)
	if err != nil {
		return nil, fmt.Errorf("onnx: model %s: %v", modelPath, err)
	}
	return s, nil
}

func (s *ortSession) run(batch, seq int, ids, mask, typeIDs []int64) ([]float32, []int64, error) {
	shape := ort.NewShape(int64(batch), int64(seq))
	inputs := make([]ort.Value, 0, len(s.inputs))
	defer func() {
		for _, v := range inputs {
			v.Destroy()
		}
	}()
	for _, name := range s.inputs {
		data := ids
		switch name {
		case "attention_mask":
			data = mask
		case "token_type_ids":
			data = typeIDs
		}
		var v ort.Value
		var err error
		if s.int32s {
			d32 := make([]int32, len(data))
			for i, x := range data {
				d32[i] = int32(x)
			}
			v, err = ort.NewTensor(shape, d32)
		} else {
			v, err = ort.NewTensor(shape, data)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("onnx: %s tensor: %v", name, err)
		}
		inputs = append(inputs, v)
	}
	outputs := []ort.Value{nil} // allocated by ONNX Runtime: its shape is the model's
	if err := s.s.Run(inputs, outputs); err != nil {
		return nil, nil, fmt.Errorf("onnx: running the model: %v", err)
	}
	defer outputs[0].Destroy()
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, nil, fmt.Errorf("onnx: model output is %T, want a float32 tensor", outputs[0])
	}
	return slices.Clone(t.GetData()), slices.Clone([]int64(t.GetShape())), nil
}

func (s *ortSession) close() error { return s.s.Destroy() }
