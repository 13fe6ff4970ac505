from toyserve.spec import SupportsDraftHooks


class ReadyForCausalLM(SupportsDraftHooks):
    def capture_hidden(self, layers):
        self.layers = layers

    def embed_and_head(self):
        return self.embed, self.head
