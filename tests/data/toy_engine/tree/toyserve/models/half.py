class HalfForCausalLM:
    def capture_hidden(self, layers):
        self.layers = layers
